#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #33 (docs/large.md): payloads above LNET_MTU toward a kernel-like peer. The peer is
# kernel_sst_server.py, written apart from ulnet's code: its ping reply lacks ulnet's large-payload bit
# (30), as a kernel node's does, and it counts every LNet message that reaches it. A ulnet node
# (tests/integration/large_put.c) pings it, then a Put and a Get of 1 MiB + 1 toward it are refused
# at the call with -EMSGSIZE and one log line each naming the size, LNET_MTU, the peer and the knob;
# the peer sees nothing after the ping but the second ping.
# Addresses: 127.233.0.1 (ulnet node), 127.233.0.3 (kernel-like peer).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes use port 988"
ul_init
LARGE_PUT=$BUILD/tests/integration/large_put
[[ -x $LARGE_PUT ]] || ul_fail "no large_put at $LARGE_PUT"
N1=$(ul_addr 233 1)@tcp
K=$(ul_addr 233 3)@tcp
STATE=$UL_TMP/ks.json

"$UL_PYTHON" "$SRC/tests/integration/kernel_sst_server.py" "$(ul_addr 233 3)" "$STATE" 2>"$STATE.err" &
SPID=$!
UL_ATEXIT+=("kill $SPID")
for _ in $(seq 200); do
	[[ -s $STATE ]] && break
	kill -0 "$SPID" 2>/dev/null || ul_fail "peer did not start: $(cat "$STATE.err")"
	sleep 0.05
done
[[ -s $STATE ]] || ul_fail "peer did not start"

ul_step "ping, then a Put and a Get of 1 MiB + 1: refused at the call, -EMSGSIZE (-90)"
ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$LARGE_PUT" "$N1" "$K" 1048577
[[ $UL_STATUS == 0 ]] || ul_fail "large_put: status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"
printf 'put -90\nget -90\nping2 0\n' >"$UL_TMP/want"
ul_diff "$UL_TMP/want" <(sed 1d "$UL_TMP/o") "large_put's results"
feats=$(sed -n 's/^features //p' "$UL_TMP/o")
(( (feats & (1 << 30)) == 0 && (feats & 0x1) )) || ul_fail "the peer's ping features $feats: want bit 30 clear"

ul_step "one log line per refusal: the size, LNET_MTU, the peer, and the knob"
grep -v '^large_put' "$UL_TMP/o.err" | grep -E 'over LNET_MTU' >"$UL_TMP/lines" || true
(( $(wc -l <"$UL_TMP/lines") == 2 )) || ul_fail "want two refusal lines: $(cat "$UL_TMP/o.err")"
for op in PUT GET; do
	grep -E "^.*$op of 1048577 bytes (to|from) $K: over LNET_MTU 1048576 .*did not announce large payloads.*nothing sent.*large_max" \
		"$UL_TMP/lines" >/dev/null || ul_fail "no $op refusal line naming size, limit, peer and knob: $(cat "$UL_TMP/lines")"
done

ul_step "the peer saw the two pings and nothing else (no announce, no data)"
ul_json "$STATE" "j['pings'] == 2 and j['lnet_msgs'] == 2 and j['lnet_types'] == {'2': 2} and j['lnet_bytes'] == 0"
echo PASS
