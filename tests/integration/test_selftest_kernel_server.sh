#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 32: one-shot runs from this node toward a kernel-like brw server. The server is
# kernel_sst_server.py, written apart from ulnet's selftest code: like a kernel node it posts brw
# request buffers only when a console sends it a server TEST entry (as many as the entry's loop), and
# requests that find no buffer park on its lazy portal and stall the connection after 8. A one-shot run
# (--from this node) must therefore make a session on the server, add a server TEST entry for its
# concurrency before the first brw request, and remove the session afterwards. Then check=discard
# (value 4, LU-20342) from the one-shot console and the lst console.
# Addresses: 127.220.0.1 (ulnet node, console and client), 127.220.0.3 (kernel-like server).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 220
sst_node n1 220 1 4096
N1=$(ul_addr 220 1)@tcp
K=$(ul_addr 220 3)@tcp
STATE=$UL_TMP/ks.json
sst_py_peer kernel_sst_server.py "$(ul_addr 220 3)" "$STATE"

export ULNET_NODE
ULNET_NODE=$(ul_sock n1)
lst() { ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$SST" "$@"; }
ok() { lst "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err" "$STATE")"; }
# brw one-shot from n1 to the server: COUNT RPCs ok, all their bytes, no error
oneshot() # RW SIZE CHECK COUNT
{
	ok --json brw "$1" --from "$N1" --to "$K" --size "$2" --check "$3" --concurrency 8 --count "$4" --timeout 3
	ul_json "$UL_TMP/o" "j['ok'] and j['rpcs'] == $4 and j['bytes'] == $4 * $2 and j['check'] == '$3' and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
}

ul_step "one-shot brw write, concurrency 8, toward a freshly started kernel-like server"
oneshot write 65536 full 32
# a session was made, one server TEST entry for brw with 8 buffers added before any request, and the
# session removed afterwards (the buffers with it)
ul_json "$STATE" "j['mksn'] == 1 and j['rmsn'] == 1 and j['server_tests'] == [[11, 8, 8]] and j['client_tests'] == 0 and j['brw'] == 32 and j['brw_before_buffers'] == 0 and j['served'] == 32 and j['mismatch'] == 0 and j['in_service_max'] <= 8 and j['buffers'] == 0 and not j['session'] and j['checks'] == {'3': 32}"

ul_step "one-shot brw read, and again (a second run sets the server up again)"
oneshot read 4096 full 16
oneshot write 1048576 simple 8
ul_json "$STATE" "j['mksn'] == 3 and j['rmsn'] == 3 and j['server_tests'] == [[11, 8, 8]] * 3 and j['brw'] == 56 and j['brw_before_buffers'] == 0 and j['served'] == 56 and j['buffers'] == 0 and not j['session']"

ul_step "check=discard (4, LU-20342) from the one-shot console: sent as 4, nothing checked"
oneshot write 65536 discard 8
oneshot read 65536 discard 8
ul_json "$STATE" "j['checks'].get('4') == 16 and j['mismatch'] == 0 and j['served'] == 72"

ul_step "check=discard from the lst console, the ulnet node as client"
ok new_session d
ok add_group c "$N1"
ok add_group s "$K"
ok add_batch b
ok add_test --batch b --from c --to s --concurrency 2 --loop 4 brw write size=4096 check=discard
ok run b
# the batch ends by itself after 4 x 2 RPCs: wait until the server has answered them all (the 60 s
# bound only guards against a hang)
deadline=$(( $(ul__now_ms) + 60000 ))
until "$UL_PYTHON" -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['served'] < 80)" "$STATE"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "the server did not answer 8 discard writes: $(cat "$STATE")"
	sleep 0.05
done
ok --json stop b
ul_json <(sed -n 1p "$UL_TMP/o") "j['ok'] and j['check'] == 'discard' and j['rpcs'] == 8"
ok end_session
ul_json "$STATE" "j['checks'].get('4') == 24 and j['mismatch'] == 0 and not j['session'] and j['buffers'] == 0"
ul_step "check=discard from a kernel console (kernel_sst_console.py at 127.220.0.5) to the ulnet node as client"
# before: the node refused the client TEST entry (EINVAL: "check must be none, simple or full")
ul_run "$UL_TMP/kc" "$UL_TMP/kc.err" timeout 60 "$UL_PYTHON" "$SRC/tests/integration/kernel_sst_console.py" \
	"$(ul_addr 220 5)" "$(ul_addr 220 1)" "$(ul_addr 220 3)" write 8192 4 3 2
[[ $UL_STATUS == 0 ]] || ul_fail "kernel console: status $UL_STATUS: $(cat "$UL_TMP/kc" "$UL_TMP/kc.err")"
ul_json "$UL_TMP/kc" "j == {'mksn': [0, 0], 'test_server': 0, 'test_client': 0, 'run': 0, 'query': 0, 'active': 0, 'rmsn': [0, 0]}"
# the node ran the batch: 3 x 2 brw writes with flags 4 reached the server, none mismatched
ul_json "$STATE" "j['checks'].get('4') == 30 and j['served'] == 86 and j['mismatch'] == 0 and j['brw_before_buffers'] == 0 and not j['session'] and j['buffers'] == 0"
echo "PASS"
