#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 12: `ulnetctl peer show` says Multi-Rail as the peer's ping info did. A kernel-like node
# (kernel_sst_client.py, independent of ulnet's ping encoder) announces MULTI_RAIL; a ulnet node does
# not; a peer never pinged shows False, as lnetctl shows an undiscovered peer.
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

mr() # NODE NID: the Multi-Rail value peer show gives for NID
{
	ul_ctl "$1" peer show --nid "$2" --json | "$UL_PYTHON" -c '
import json, sys
p = json.load(sys.stdin)["peer"]
print(p[0]["Multi-Rail"] if p else "absent")'
}

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
echo PASS
