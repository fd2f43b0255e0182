#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ulnetctl plan` (the o2ib RDMA planner, offline): exact text for a small case, the LU-5718 shape
# completing by registration (sink) and bounce (source), send-queue windows in --json, the same output
# on every run, and clear failures. Needs no node and no addresses.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP
plan() { "$ULNETCTL" plan "$@"; }

ul_step "exact output: 8 KiB from two 4K kiov pages into a sink at offset 7, one SGE per WR, room for 2"
plan --len 8K --src-form kiov --dst-offset 7 --max-send-sge 1 --max-qp-wr 2 >"$T/small.txt"
cat >"$T/small.want" <<'EOF'
advertise: region, 1 fragment(s) in 1 registration (rc 0)
  why: registered as one region: one fragment
  memory: 3 page piece(s), 1 contiguous run(s)
  limits: max_send_sge=1 sq_room=2 max_frags=257 map_on_demand=1 bounce_size=1048576
  tried: region 1 fragment(s): ok
  registration: region addr=0x80000007 len=8192
  frag[0] addr=0x80000007 nob=8192
source: gather, 2 RDMA WRITE WR(s) in 2 window(s) + completion SEND (rc 0)
  why: the pieces as registered in regions fit max_frags WRs
  transfer: 8192 bytes; memory: 2 page piece(s), 2 contiguous run(s); peer descriptor: 1 fragment(s) used
  limits: max_send_sge=1 sq_room=2 max_frags=257 map_on_demand=1 bounce_size=1048576
  tried: gather 2 piece(s) -> 2 WR(s): ok
  reg[0] region addr=0x10000000 len=4096
  reg[1] region addr=0x10002000 len=4096
  wr[0] window=0 remote_frag=0 remote=0x80000007 nob=4096 sges: reg[0]+0x0/4096
  wr[1] window=0 signalled remote_frag=0 remote=0x80001007 nob=4096 sges: reg[1]+0x0/4096
  send: completion in window 1 (signalled)
EOF
ul_diff "$T/small.want" "$T/small.txt" "plan text"

ul_step "LU-5718: 1 MiB of 4K pages into a page-by-page sink at offset 7, max_send_sge=1, 16 fragments"
lu=(--len 1M --src-form kiov --src-page-size 4K --dst-form contig --dst-page-size 4K --dst-offset 7 --dst-mod 0
    --max-send-sge 1 --max-frags 16 --max-qp-wr 16)
plan "${lu[@]}" >"$T/lu.txt"
grep -q '^advertise: region, 1 fragment(s) in 1 registration (rc 0)$' "$T/lu.txt" || ul_fail "sink not one region"
grep -q '^  tried: pages 257 fragment(s): no; region 1 fragment(s): ok$' "$T/lu.txt" || ul_fail "no page-by-page attempt"
grep -q '^source: bounce, 1 RDMA WRITE WR(s) in 1 window(s)' "$T/lu.txt" || ul_fail "source not bounced"
grep -q 'gather 256 piece(s) -> 256 WR(s): no' "$T/lu.txt" || ul_fail "why does not show the gather attempt"
plan "${lu[@]}" --json >"$T/lu.json"
ul_json "$T/lu.json" 'j["advertise"]["how"] == "region" and len(j["advertise"]["frags"]) == 1'
ul_json "$T/lu.json" 'j["source"]["strategy"] == "bounce" and len(j["source"]["wrs"]) == 1 and j["source"]["rc"] == 0'
ul_json "$T/lu.json" 'j["source"]["registrations"][0]["kind"] == "bounce"'

ul_step "windows: 128 WRs (two SGEs each) into a send queue with room for 16"
plan --len 1M --src-form kiov --max-send-sge 2 --max-qp-wr 16 --json >"$T/win.json"
ul_json "$T/win.json" 'j["source"]["strategy"] == "gather" and len(j["source"]["wrs"]) == 128'
ul_json "$T/win.json" 'j["source"]["windows"] == 9 and max(__import__("collections").Counter(w["window"] for w in j["source"]["wrs"]).values()) <= 16'
ul_json "$T/win.json" 'all(len(w["sges"]) <= 2 for w in j["source"]["wrs"]) and sum(w["nob"] for w in j["source"]["wrs"]) == 1048576'

ul_step "deterministic: the same output twice"
plan "${lu[@]}" --json >"$T/lu2.json"
ul_diff "$T/lu.json" "$T/lu2.json" "second run"

ul_step "no bounce buffer: exit 1, one line saying why"
ul_run "$T/nb.out" "$T/nb.err" "$ULNETCTL" plan "${lu[@]}" --bounce-size 0
(( UL_STATUS == 1 )) || ul_fail "status $UL_STATUS, want 1"
ul_one_line "$T/nb.err" '^ulnetctl: plan: no plan \(Message too long\): .*bounce'

ul_step "usage errors: exit 2"
for bad in "--src-form pages" "--len 2M" "--len 0" "--len 4K --resid 8K" "--src-page-size 3000" "--max-qp-wr 1" \
	   "--bogus 1" "--len"; do
	# shellcheck disable=SC2086
	ul_run "$T/u.out" "$T/u.err" "$ULNETCTL" plan $bad
	(( UL_STATUS == 2 )) || ul_fail "'$bad': status $UL_STATUS, want 2"
	ul_one_line "$T/u.err" '^ulnetctl: plan: '
done
"$ULNETCTL" plan --help >"$UL_TMP/help.txt" || ul_fail "plan --help: status $?" # a file: grep -q in a pipe may SIGPIPE it
grep -q '^usage: ulnetctl plan' "$UL_TMP/help.txt" || ul_fail "plan --help"
ul_step "ok"
