#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lst's scripted form: the console's state (session, groups, batches) lives in the attached ulnetd, so
# every step below is a separate ulnet-selftest invocation. Two client nodes (4 KiB and 64 KiB pages)
# and one server; brw write and read with unaligned offsets and full check, and ping, in one batch;
# run, stat, stop (one result per client node), end_session. Then the failures lst was known for:
# unknown names give one error line and a non-zero exit (LU-19293), missing arguments a usage line
# (LU-19295), never a crash.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 42
sst_two_nodes 42
sst_node n3 42 3 4096
N3=$(ul_addr 42 3)@tcp
export ULNET_NODE
ULNET_NODE=$(ul_sock n3) # n3 is the console node

lst() # lst OUT ARGS...: one console invocation, status in UL_STATUS
{
	local out=$1
	shift
	ul_run "$out" "$out.err" timeout 60 "$SST" "$@"
}
ok() { lst "$UL_TMP/o" "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }

# wait_tests GROUP NODES REGEX: poll `stat GROUP` until NODES of its nodes have a "client tests since
# run" line matching REGEX (the state the next step asserts on, not a fixed sleep); the 60 s bound only
# guards against a hang. stat's status is not judged here: it is 1 once a node has selftest errors.
wait_tests()
{
	local group=$1 nodes=$2 re=$3 deadline n
	deadline=$(( $(ul__now_ms) + 60000 ))
	while :; do
		lst "$UL_TMP/w" stat "$group" --delay 0.1
		n=$(grep 'its client tests since run:' "$UL_TMP/w" | grep -cE -- "$re" || true)
		(( n >= nodes )) && return 0
		(( $(ul__now_ms) < deadline )) ||
			ul_fail "stat $group: want $nodes node(s) matching /$re/ (status $UL_STATUS): $(cat "$UL_TMP/w" "$UL_TMP/w.err")"
		sleep 0.05
	done
}

ul_step "no session yet: one line, non-zero"
for cmd in "list_group" "list_group g" "run b" "stop b" "stat g" "add_batch b" "end_session" "show_session"; do
	# shellcheck disable=SC2086
	lst "$UL_TMP/e" $cmd
	[[ $UL_STATUS == 1 ]] || ul_fail "'$cmd' without a session: status $UL_STATUS"
	ul_one_line "$UL_TMP/e.err" "^ulnet-selftest: .*no session"
done

ul_step "session, groups, batch, tests"
ok new_session sess1
lst "$UL_TMP/e" new_session sess2
[[ $UL_STATUS == 1 ]] || ul_fail "second session: status $UL_STATUS"
ul_one_line "$UL_TMP/e.err" "session 'sess1' is open"
ok add_group clients "$N1" "$N2"
ok add_group servers "$N3"
ok list_group
{ grep -q '^clients: 2 node' "$UL_TMP/o" && grep -q '^servers: 1 node' "$UL_TMP/o"; } || ul_fail "list_group: $(cat "$UL_TMP/o")"
ok list_group clients
[[ $(grep -c ' active$' "$UL_TMP/o") == 2 ]] || ul_fail "list_group clients: $(cat "$UL_TMP/o")"
ok add_batch bulk
ok add_test --batch bulk --from clients --to servers --concurrency 2 brw write size=1M off=4097 check=full
ok add_test --batch bulk --from servers --to clients brw read size=65535 off=1 check=full
ok add_batch pings
ok add_test --batch pings --from clients --to servers ping
ok show_session
grep -q 'session sess1: console .*, 3 node(s), 2 group(s), 2 batch(es)' "$UL_TMP/o" || ul_fail "show_session: $(cat "$UL_TMP/o")"

ul_step "run, stat, stop"
ok run bulk
# both brw tests have completed RPCs before the pings start: each client node has moved at least one
# 1 MiB write (only brw moves bytes), and n3 (the servers group, the brw read's client) one RPC
wait_tests clients 2 'since run: [0-9]+ RPCs ok, ([1-9][0-9]{6,}) bytes' # >= 1,000,000 bytes
wait_tests servers 1 'since run: [1-9][0-9]* RPCs ok'
ok run pings
ok stat clients --delay 0.5
[[ $(grep -c 'LNet in (into the node).*MB/s' "$UL_TMP/o") == 2 ]] || ul_fail "stat: $(cat "$UL_TMP/o")"
grep -q 'its client tests since run: [1-9][0-9]* RPCs ok' "$UL_TMP/o" || ul_fail "stat: no client tests: $(cat "$UL_TMP/o")"
ok --json stop bulk
[[ $(wc -l < "$UL_TMP/o") == 3 ]] || ul_fail "stop: want one result per client node: $(cat "$UL_TMP/o")"
ul_json <(sed -n 1p "$UL_TMP/o") "j['ok'] and j['test'] == 'brw write' and j['direction'] == 'client\u2192server' and j['rpcs'] > 0 and j['size'] == 1048576 and j['offset'] == 4097"
ul_json <(sed -n 3p "$UL_TMP/o") "j['ok'] and j['test'] == 'brw read' and j['direction'] == 'server\u2192client' and j['from'] == '$N3' and j['rpcs'] > 0 and j['latency_us']['p99'] is not None"
ok stop pings
[[ $(grep -c '^ping .*: ok$' "$UL_TMP/o") == 2 ]] || ul_fail "stop pings: $(cat "$UL_TMP/o")"

ul_step "a corrupted transfer inside a batch: stop exits 1 and names the offset"
ok add_batch bad
ok add_test --batch bad --from servers --to clients brw read size=4096 check=full
"$SST" --node "$(ul_sock n1)" inject --count 1 --at 100 >/dev/null || ul_fail "inject"
"$SST" --node "$(ul_sock n2)" inject --count 1 --at 100 >/dev/null || ul_fail "inject"
ok run bad
# n3 (the brw read's client) has seen the corrupted transfer before the batch stops
wait_tests servers 1 'mismatch [1-9]'
lst "$UL_TMP/s" stop bad
[[ $UL_STATUS == 1 ]] || ul_fail "stop bad: status $UL_STATUS: $(cat "$UL_TMP/s" "$UL_TMP/s.err")"
{ grep -q 'mismatch [12],.*FAILED' "$UL_TMP/s" && grep -q 'first data mismatch at byte 100 ' "$UL_TMP/s"; } ||
	ul_fail "stop bad: $(cat "$UL_TMP/s")"

ul_step "unknown names: one error line, exit 1 (lst crashed on list_group: LU-19293)"
for cmd in "list_group nosuch" "run nosuch" "stop nosuch" "stat nosuch" \
	"add_test --batch nosuch --from clients --to servers ping" \
	"add_test --batch bulk --from nosuch --to servers ping" "add_group clients $N1" "add_batch bulk"; do
	# shellcheck disable=SC2086
	lst "$UL_TMP/e" $cmd
	[[ $UL_STATUS == 1 ]] || ul_fail "'$cmd': status $UL_STATUS, want 1: $(cat "$UL_TMP/e.err")"
	ul_one_line "$UL_TMP/e.err" "^ulnet-selftest: .*(no (group|batch) 'nosuch'|exists)"
done

ul_step "missing or bad arguments: a usage line, exit 2 (LU-19295)"
for cmd in "new_session" "add_group" "add_group g" "add_batch" "run" "stop" "add_test" "add_test --batch" \
	"add_test --batch bulk --from clients brw" "add_test --batch bulk --from clients --to servers brw write size=2G" \
	"add_test --batch bulk --from clients --to servers brw write check=maybe" \
	"add_test --batch bulk --from clients --to servers frobnicate" "add_group g 1.2.3.4@nonet" \
	"list_group a b" "stat g --delay" "end_session extra"; do
	# shellcheck disable=SC2086
	lst "$UL_TMP/e" $cmd
	[[ $UL_STATUS == 2 ]] || ul_fail "'$cmd': status $UL_STATUS, want 2: $(cat "$UL_TMP/e.err")"
	grep -q 'ulnet-selftest: ' "$UL_TMP/e.err" || ul_fail "'$cmd': no message: $(cat "$UL_TMP/e.err")"
done

ul_step "end_session removes the session from every node"
ok end_session
for n in n1 n2 n3; do
	ul_ctl "$n" call selftest stat > "$UL_TMP/st" || ul_fail "stat $n"
	grep -q 'session: False' "$UL_TMP/st" || ul_fail "$n still in a session: $(cat "$UL_TMP/st")"
done
ok new_session sess3
ok end_session
exit 0
