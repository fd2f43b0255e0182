#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Faults: a corrupted transfer is a data mismatch with its byte offset (server-side hook for read,
# client-side hook for write); a server killed mid-test is "peer gone" (not a timeout) and the
# console exits non-zero without hanging. The same driven from a third node's console (remote
# --from), plus a remote client node killed mid-test. No step asserts a duration.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 41
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

# kill_mid_run CONSOLE VICTIM WATCH FIELD WANT_ST CHECK BRW_ARGS...: a 1 MiB brw test (concurrency 4,
# RPC timeout 5 s) driven by CONSOLE's daemon; once WATCH's counter FIELD has grown by 12 MiB (data is
# moving, past the RPCs first in flight) node VICTIM is SIGKILLed. The console must end by itself with
# status WANT_ST ("nonzero": any but 0) and a JSON result satisfying CHECK. No time is asserted: the
# test asks for 300 s, so a console that did not notice the kill would still be running at the 60 s
# bound, which only guards against that hang.
kill_mid_run()
{
	local console=$1 victim=$2 watch=$3 field=$4 want=$5 check=$6 out=$UL_TMP/kill.json base cpid st=0 deadline
	shift 6
	base=$(ul_stat "$watch" "$field") || ul_fail "no stats from $watch"
	"$SST" --node "$(ul_sock "$console")" --json brw "$@" --size 1M --concurrency 4 --duration 300 --timeout 5 \
		>"$out" 2>"$out.err" &
	cpid=$!
	ul_wait_stat "$watch" "$field" $(( base + (12 << 20) ))
	ul_stop_node "$victim" KILL
	deadline=$(( $(ul__now_ms) + 60000 ))
	while ul__alive "$cpid" && (( $(ul__now_ms) < deadline )); do sleep 0.05; done
	if ul__alive "$cpid"; then
		kill "$cpid"
		ul_fail "console still running 60 s after $victim was killed: it did not notice"
	fi
	wait "$cpid" || st=$?
	if [[ $want == nonzero ]]; then
		(( st != 0 )) || ul_fail "console exited 0 after $victim died: $(cat "$out")"
	else
		(( st == want )) || ul_fail "console exited $st after $victim died, want $want: $(cat "$out.err")"
	fi
	ul_json "$out" "$check"
}

ul_step "remote client node killed mid-test: peer gone, the console exits non-zero, no hang"
sst_node n4 41 4 65536
N4=$(ul_addr 41 4)@tcp
# (not its rpcs: that is what the console's stat polls saw before the kill, 0 when the kill beat the first poll)
kill_mid_run n3 n4 n4 send_length 1 \
	"not j['ok'] and j['errors']['peer_gone'] >= 1 and 'stopped answering' in j['first_error']" \
	write --from "$N4" --to "$N1"

ul_step "remote run, its server killed mid-test: the remote client reports peer gone"
sst_node n5 41 5 65536
N5=$(ul_addr 41 5)@tcp
kill_mid_run n3 n5 n5 send_length 1 "not j['ok'] and j['errors']['peer_gone'] >= 1 and j['rpcs'] > 0" \
	read --from "$N1" --to "$N5"

ul_step "server killed mid-test: peer gone, non-zero exit, no hang"
kill_mid_run n1 n2 n2 recv_length nonzero "not j['ok'] and j['errors']['peer_gone'] >= 1 and j['rpcs'] > 0" \
	write --from "$N1" --to "$N2"
exit 0
