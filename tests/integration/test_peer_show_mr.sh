#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 12: `ulnetctl peer show` says Multi-Rail as the peer's ping info did. A kernel-like node
# (kernel_sst_client.py, independent of ulnet's ping encoder) announces MULTI_RAIL; a ulnet node does
# not; a peer never pinged shows False, as lnetctl shows an undiscovered peer. Issue #33: `large
# payloads` says whether the peer takes payloads above LNET_MTU (its ping reply's bit 30): not announced
# by the kernel-like node, announced by a ulnet node, unknown before a ping; in YAML, -v and JSON alike.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
sst_require_tcp 202
sst_two_nodes 202
K=$(ul_addr 202 3)
"$UL_PYTHON" "$SRC/tests/integration/kernel_sst_client.py" "$K" "$UL_TMP/k.json" 2>"$UL_TMP/k.err" &
UL_ATEXIT+=("kill $!")
for i in $(seq 200); do [[ -s $UL_TMP/k.json ]] && break; sleep 0.05; done
[[ -s $UL_TMP/k.json ]] || ul_fail "responder did not start: $(cat "$UL_TMP/k.err")"

field() # NODE NID KEY: the value of KEY peer show gives for NID
{
	ul_ctl "$1" peer show --nid "$2" --json | "$UL_PYTHON" -c '
import json, sys
p = json.load(sys.stdin)["peer"]
print(p[0][sys.argv[1]] if p else "absent")' "$3"
}
mr() { field "$1" "$2" Multi-Rail; }
large() { field "$1" "$2" "large payloads"; }

ul_step "a Multi-Rail kernel-like peer: ping and peer show agree (True)"
ul_ctl n1 ping "$K@tcp" --timeout_ms 5000 --json > "$UL_TMP/p.json" || ul_fail "ping $K: $(cat "$UL_TMP/p.json")"
ul_json "$UL_TMP/p.json" "j['ping'][0]['Multi-Rail'] is True and j['ping'][0]['primary nid'] == '$K@tcp'"
[[ $(mr n1 "$K@tcp") == True ]] || ul_fail "peer show $K: Multi-Rail $(mr n1 "$K@tcp"), ping said True"

ul_step "a ulnet peer (no Multi-Rail feature): False, before and after a ping"
ul_ctl n1 ping "$N2" --timeout_ms 5000 --json > "$UL_TMP/p2.json" || ul_fail "ping $N2"
ul_json "$UL_TMP/p2.json" "j['ping'][0]['Multi-Rail'] is False"
[[ $(mr n1 "$N2") == False ]] || ul_fail "peer show $N2: Multi-Rail $(mr n1 "$N2")"
# n2 knows n1 as a peer (it answered n1's ping) but never pinged it
[[ $(mr n2 "$N1") == False ]] || ul_fail "peer show on n2 for $N1 (never pinged): $(mr n2 "$N1")"

ul_step "large payloads: not announced by the kernel-like peer, announced by the ulnet peer, unknown before a ping"
[[ $(large n1 "$K@tcp") == "not announced" ]] || ul_fail "peer show $K: large payloads $(large n1 "$K@tcp")"
[[ $(large n1 "$N2") == announced ]] || ul_fail "peer show $N2: large payloads $(large n1 "$N2")"
[[ $(large n2 "$N1") == unknown ]] || ul_fail "peer show on n2 for $N1 (never pinged): $(large n2 "$N1")"
ul_ctl n1 peer show --nid "$N2" >"$UL_TMP/y" || ul_fail "peer show (YAML)"
grep -qx '      large payloads: announced' "$UL_TMP/y" || ul_fail "YAML peer show: $(cat "$UL_TMP/y")"
ul_ctl n2 peer show -v --nid "$N1" >"$UL_TMP/v" || ul_fail "peer show -v"
grep -qx '      large payloads: unknown' "$UL_TMP/v" || ul_fail "peer show -v: $(cat "$UL_TMP/v")"
echo PASS
