#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Faults: a corrupted transfer is a data mismatch with its byte offset (server-side hook for read,
# client-side hook for write); a server killed mid-test is "peer gone" within the RPC timeout and
# the console exits non-zero without hanging. The same driven from a third node's console (remote
# --from), plus a remote client node killed mid-test.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"
sst_require_tcp 41
sst_two_nodes 41

ul_step "read: server corrupts byte 12345"
"$SST" --node "$(ul_sock n2)" inject --count 1 --at 12345 >/dev/null || ul_fail "inject"
ul_run "$UL_TMP/r.json" "$UL_TMP/r.err" "$SST" --node "$(ul_sock n1)" --json brw read --from "$N1" --to "$N2" \
	--size 65535 --offset 4097 --count 5
[[ $UL_STATUS == 1 ]] || ul_fail "corrupted read: status $UL_STATUS: $(cat "$UL_TMP/r.json" "$UL_TMP/r.err")"
ul_json "$UL_TMP/r.json" "not j['ok'] and j['errors']['mismatch'] == 1 and j['mismatch_offset'] == 12345 and j['rpcs'] == 4"

ul_step "write: client corrupts byte 4096, the server finds it"
ul_run "$UL_TMP/w.txt" "$UL_TMP/w.err" "$SST" --node "$(ul_sock n2)" brw write --from "$N2" --to "$N1" \
	--size 1M --corrupt-at 4096 --corrupt-count 1 --count 3
[[ $UL_STATUS == 1 ]] || ul_fail "corrupted write: status $UL_STATUS: $(cat "$UL_TMP/w.txt" "$UL_TMP/w.err")"
grep -q 'mismatch 1,.*FAILED' "$UL_TMP/w.txt" || ul_fail "no mismatch: $(cat "$UL_TMP/w.txt")"
grep -q 'first data mismatch at byte 4096 of the transfer' "$UL_TMP/w.txt" || ul_fail "no offset: $(cat "$UL_TMP/w.txt")"

ul_step "remote --from: a mismatch found on the remote client, and one found by the server, keep their offsets"
sst_node n3 41 3 4096
"$SST" --node "$(ul_sock n2)" inject --count 1 --at 4097 >/dev/null || ul_fail "inject"
sst_run "$UL_TMP/rr.json" n3 --json brw read --from "$N1" --to "$N2" --size 1M --offset 1 --count 6 --concurrency 2
[[ $UL_STATUS == 1 ]] || ul_fail "remote corrupted read: status $UL_STATUS: $(cat "$UL_TMP/rr.json" "$UL_TMP/rr.json.err")"
ul_json "$UL_TMP/rr.json" "not j['ok'] and j['clients'] == 'remote' and j['errors']['mismatch'] == 1 and j['mismatch_offset'] == 4097 and j['rpcs'] == 5"
"$SST" --node "$(ul_sock n1)" inject --count 1 --at 65535 >/dev/null || ul_fail "inject"
sst_run "$UL_TMP/rw.txt" n3 brw write --from "$N2" --to "$N1" --size 65536 --offset 65537 --count 3
[[ $UL_STATUS == 1 ]] || ul_fail "remote corrupted write: status $UL_STATUS: $(cat "$UL_TMP/rw.txt" "$UL_TMP/rw.txt.err")"
grep -q 'mismatch 1,.*FAILED' "$UL_TMP/rw.txt" || ul_fail "no mismatch: $(cat "$UL_TMP/rw.txt")"
grep -q 'first data mismatch at byte 65535 of the transfer' "$UL_TMP/rw.txt" || ul_fail "no offset: $(cat "$UL_TMP/rw.txt")"

ul_step "remote client node killed mid-test: peer gone, the console exits non-zero, no hang"
sst_node n4 41 4 65536
N4=$(ul_addr 41 4)@tcp
start=$(date +%s)
"$SST" --node "$(ul_sock n3)" --json brw write --from "$N4" --to "$N1" --size 1M --concurrency 4 \
	--duration 60 --timeout 5 >"$UL_TMP/rk.json" 2>"$UL_TMP/rk.err" &
cpid=$!
ul_wait_stat n4 send_length $(( 12 << 20 )) # the test is moving data: kill it mid-run
ul_stop_node n4 KILL
st=0
for _ in $(seq 300); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$cpid" 2>/dev/null && { kill "$cpid"; ul_fail "console still running 30 s after the kill"; }
wait "$cpid" || st=$?
(( st == 1 )) || ul_fail "console exited $st after its client node died: $(cat "$UL_TMP/rk.err")"
(( $(date +%s) - start < 25 )) || ul_fail "took $(( $(date +%s) - start )) s"
# (not its rpcs: that is what the console's stat polls saw before the kill, 0 when the kill beat the first poll)
ul_json "$UL_TMP/rk.json" "not j['ok'] and j['errors']['peer_gone'] >= 1 and 'stopped answering' in j['first_error']"

ul_step "remote run, its server killed mid-test: the remote client reports peer gone"
sst_node n5 41 5 65536
N5=$(ul_addr 41 5)@tcp
start=$(date +%s)
"$SST" --node "$(ul_sock n3)" --json brw read --from "$N1" --to "$N5" --size 1M --concurrency 4 \
	--duration 60 --timeout 5 >"$UL_TMP/rs.json" 2>"$UL_TMP/rs.err" &
cpid=$!
ul_wait_stat n5 send_length $(( 12 << 20 )) # past the 4 RPCs in flight: some completed
ul_stop_node n5 KILL
st=0
for _ in $(seq 300); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$cpid" 2>/dev/null && { kill "$cpid"; ul_fail "console still running 30 s after the kill"; }
wait "$cpid" || st=$?
(( st == 1 )) || ul_fail "console exited $st after the server died: $(cat "$UL_TMP/rs.err")"
(( $(date +%s) - start < 25 )) || ul_fail "took $(( $(date +%s) - start )) s"
ul_json "$UL_TMP/rs.json" "not j['ok'] and j['errors']['peer_gone'] >= 1 and j['rpcs'] > 0"

ul_step "server killed mid-test: peer gone, non-zero exit, no hang"
start=$(date +%s)
"$SST" --node "$(ul_sock n1)" --json brw write --from "$N1" --to "$N2" --size 1M --concurrency 4 \
	--duration 60 --timeout 5 >"$UL_TMP/k.json" 2>"$UL_TMP/k.err" &
cpid=$!
recv0=$(ul_stat n2 recv_length)
ul_wait_stat n2 recv_length $(( recv0 + (12 << 20) ))
ul_stop_node n2 KILL
st=0
for _ in $(seq 300); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$cpid" 2>/dev/null && { kill "$cpid"; ul_fail "console still running 30 s after the kill"; }
wait "$cpid" || st=$?
(( st != 0 )) || ul_fail "console exited 0 after its server died"
(( $(date +%s) - start < 25 )) || ul_fail "took $(( $(date +%s) - start )) s"
ul_json "$UL_TMP/k.json" "not j['ok'] and j['errors']['peer_gone'] >= 1 and j['rpcs'] > 0"
exit 0
