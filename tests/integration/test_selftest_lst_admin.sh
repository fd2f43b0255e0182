#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lst parity (issue #32): the administration commands an lst user reaches for, each a separate
# ulnet-selftest invocation against the console node's ulnetd: ping (group and --nodes: active, busy,
# unknown, down), del_group (refused while a batch uses it; later groups keep their tests),
# update_group --clean/--remove/--refresh, show_error (--session), query (--all, --server, --test,
# --loop), list_batch NAME (--test, --server), stat's lst options (--bw --rate --read --write --avg
# --min --max --mbs --count --delay --timeout, GROUP or NIDs), run --timeout, add_test --distribute
# all and x:all, the console's bounded wait on a silent ulnetd (--wait), bad input (one message, exit
# 2), and a console node stopping in the middle of stat --count.
# Addresses: 127.224.0.{1,2,3,4,6} (nodes), 127.224.0.9 (never started).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"
T=224
sst_require_tcp $T
sst_two_nodes $T          # n1 (4 KiB pages), n2 (64 KiB pages)
sst_node n3 $T 3 4096     # the console
sst_node n4 $T 4 4096     # another console's node: busy for ours
N3=$(ul_addr $T 3)@tcp
N4=$(ul_addr $T 4)@tcp
N6=$(ul_addr $T 6)@tcp    # started late (update_group --refresh)
N9=$(ul_addr $T 9)@tcp    # never started: down
export ULNET_NODE
ULNET_NODE=$(ul_sock n3)

lst() # lst OUT ARGS...: one console invocation, status in UL_STATUS; never longer than 60 s
{
	local out=$1
	shift
	ul_run "$out" "$out.err" timeout 60 "$SST" "$@"
}
ok() { lst "$UL_TMP/o" "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }
# want STATUS REGEX ARGS...: exit STATUS and one stderr line matching REGEX
want()
{
	local st=$1 re=$2
	shift 2
	lst "$UL_TMP/e" "$@"
	[[ $UL_STATUS == "$st" ]] || ul_fail "'$*': status $UL_STATUS, want $st: $(cat "$UL_TMP/e" "$UL_TMP/e.err")"
	ul_one_line "$UL_TMP/e.err" "$re"
}
sst_json() { "$SST" --node "$(ul_sock "$1")" --json stat > "$UL_TMP/$1.sst" || ul_fail "stat $1"; }
field() { "$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['selftest'][sys.argv[2]])" "$UL_TMP/$1.sst" "$2"; }
# wait_query BATCH REGEX: poll `query BATCH` until its summary matches (observable state, no fixed sleep)
wait_query()
{
	local deadline=$(( $(ul__now_ms) + 30000 ))
	while :; do
		lst "$UL_TMP/q" query "$1"
		grep -Eq -- "$2" "$UL_TMP/q" && return 0
		(( $(ul__now_ms) < deadline )) || ul_fail "query $1: never /$2/: $(cat "$UL_TMP/q" "$UL_TMP/q.err")"
		sleep 0.05
	done
}

ul_step "another console's session on n4 (busy for ours)"
"$SST" --node "$(ul_sock n4)" new_session other >/dev/null || ul_fail "n4 new_session"
"$SST" --node "$(ul_sock n4)" add_group self "$N4" >/dev/null || ul_fail "n4 add_group"

ul_step "session and groups; a group with a node that never answers"
ok new_session adm --timeout 2
ok add_group first "$N1"      # deleted later: the groups after it move down one
ok add_group clients "$N1" "$N2"
ok add_group servers "$N3"
ok add_group spare "$N1" "$N9"
grep -q '^warning: 1 of 2 node(s) did not answer' "$UL_TMP/o" || ul_fail "add_group spare: $(cat "$UL_TMP/o")"

ul_step "ping: a group, --nodes, states and exit statuses"
ok ping clients --timeout 3
{ grep -q "^$N1 active$" "$UL_TMP/o" && grep -q "^$N2 active$" "$UL_TMP/o" &&
	grep -q '^total 2 node(s): 2 active, 0 busy, 0 unknown, 0 down$' "$UL_TMP/o"; } || ul_fail "ping clients: $(cat "$UL_TMP/o")"
lst "$UL_TMP/p" ping --nodes "$N1,$N4,$N9"
[[ $UL_STATUS == 1 ]] || ul_fail "ping with a down node: status $UL_STATUS: $(cat "$UL_TMP/p" "$UL_TMP/p.err")"
{ grep -q "^$N1 active$" "$UL_TMP/p" && grep -q "^$N4 busy (.*other" "$UL_TMP/p" && grep -q "^$N9 down (" "$UL_TMP/p"; } ||
	ul_fail "ping --nodes: $(cat "$UL_TMP/p")"
ul_one_line "$UL_TMP/p.err" "^ulnet-selftest: ping: 1 node\(s\) down$"
want 1 "^ulnet-selftest: .*no group 'nosuch' in session adm" ping nosuch

ul_step "update_group: --clean down, --remove, --refresh of a node that came up"
ok update_group spare --clean down
grep -q '^group spare: 1 node(s) removed' "$UL_TMP/o" || ul_fail "clean: $(cat "$UL_TMP/o")"
ok list_group spare
[[ $(cat "$UL_TMP/o") == "$N1 active" ]] || ul_fail "spare after clean: $(cat "$UL_TMP/o")"
want 1 "^ulnet-selftest: update_group: node $N2 is not in group spare" update_group spare --remove "$N2"
ok update_group spare --remove "$N1"
ok list_group
grep -q '^spare: 0 node' "$UL_TMP/o" || ul_fail "spare after remove: $(cat "$UL_TMP/o")"
ok ping clients # n1 is still in clients: it stayed in the session
grep -q "^$N1 active$" "$UL_TMP/o" || ul_fail "n1 left the session with spare: $(cat "$UL_TMP/o")"
ok add_group late "$N6" "$N1"
grep -q '^warning: 1 of 2' "$UL_TMP/o" || ul_fail "add_group late: $(cat "$UL_TMP/o")"
sst_node n6 $T 6 4096
# n3's tcp LND backs off reconnecting to a peer that refused (as socklnd does): n6 speaks first, then
# n3 reaches it; wait until lst ping sees it answer (no session there yet: unknown)
ul_ctl n6 ping "$N3" >/dev/null || ul_fail "n6 cannot ping n3"
deadline=$(( $(ul__now_ms) + 30000 ))
until lst "$UL_TMP/p6" ping --nodes "$N6"; grep -q "^$N6 unknown" "$UL_TMP/p6"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "n6 never answers a ping: $(cat "$UL_TMP/p6")"
	sleep 0.05
done
ok update_group late --refresh
grep -q '^group late: 1 node(s) joined again' "$UL_TMP/o" || ul_fail "refresh: $(cat "$UL_TMP/o")"
ok list_group late
[[ $(grep -c ' active$' "$UL_TMP/o") == 2 ]] || ul_fail "late after refresh: $(cat "$UL_TMP/o")"
ul_ctl n6 call selftest stat > "$UL_TMP/st6" || ul_fail "stat n6"
grep -q 'session: True' "$UL_TMP/st6" || ul_fail "n6 not in the session after refresh: $(cat "$UL_TMP/st6")"

ul_step "tests, --distribute all, list_batch NAME"
ok add_batch b
ok add_test --batch b --from clients --to servers --concurrency 2 brw write size=64k check=full
ok add_batch p
ok add_test --batch p --from servers --to clients --distribute all ping
ok list_batch p
{ grep -q '^test 1: ping, loop until stopped, concurrency 1, distribute 1:2, .*from servers (1 node(s)) to clients (2 node(s))' \
	"$UL_TMP/o" && grep -q '^batch p: 1 test(s), idle$' "$UL_TMP/o"; } || ul_fail "list_batch p: $(cat "$UL_TMP/o")"
ok add_batch d
ok add_test --batch d --from clients --to clients --distribute 2:all ping
ok list_batch d
grep -q '^test 1: ping, .*distribute 2:2,' "$UL_TMP/o" || ul_fail "list_batch d (2:all): $(cat "$UL_TMP/o")"
ok list_batch b --test 1
{ grep -q '^test 1: brw write size=65536 off=0 check=full, .*concurrency 2, distribute 1:1' "$UL_TMP/o" &&
	grep -q "^  client $N1$" "$UL_TMP/o" && grep -q "^  client $N2$" "$UL_TMP/o"; } || ul_fail "list_batch b --test 1: $(cat "$UL_TMP/o")"
ok list_batch b --test 1 --server
grep -q "^  server $N3$" "$UL_TMP/o" || ul_fail "list_batch --server: $(cat "$UL_TMP/o")"
want 1 "no test 2" list_batch b --test 2

ul_step "del_group: refused while a batch uses it; an unused one goes and the tests keep their groups"
want 1 "^ulnet-selftest: del_group: group 'clients' is used by test 1 of batch 'b'" del_group clients
ok del_group first
ok del_group spare
want 1 "no group 'first'" del_group first
ok list_batch b
grep -q 'from clients (2 node(s)) to servers (1 node(s))' "$UL_TMP/o" || ul_fail "tests lost their groups: $(cat "$UL_TMP/o")"
want 1 "is used by test 1 of batch" update_group servers --refresh

ul_step "run --timeout: the clients stop by themselves; query follows them"
ok run b --timeout 2
grep -q 'for 2 s' "$UL_TMP/o" || ul_fail "run --timeout: $(cat "$UL_TMP/o")"
ok query b --all
{ grep -Eq "^$N1 (running|idle)$" "$UL_TMP/o" && grep -q '^batch b: ' "$UL_TMP/o"; } || ul_fail "query --all: $(cat "$UL_TMP/o")"
ok query b --server --all --timeout 3
{ grep -q "^$N3 idle$" "$UL_TMP/o" && grep -q '^batch b (servers): idle; running 0, idle 1' "$UL_TMP/o"; } ||
	ul_fail "query --server: $(cat "$UL_TMP/o")"
wait_query b '^batch b: idle; running 0, idle 2, unknown 0, down 0$'
ok query b --test 1 --loop 2 --delay 0.1
[[ $(grep -c '^batch b test 1: idle' "$UL_TMP/o") == 2 ]] || ul_fail "query --loop 2: $(cat "$UL_TMP/o")"
want 1 "no test 3" query b --test 3
ok --json stop b
[[ $(wc -l < "$UL_TMP/o") == 2 ]] || ul_fail "stop b: $(cat "$UL_TMP/o")"
ul_json <(sed -n 1p "$UL_TMP/o") "j['ok'] and j['rpcs'] > 0"

ul_step "--distribute all: the ping client reaches both servers"
sst_json n1; r1=$(field n1 rpcs_rcvd)
sst_json n2; r2=$(field n2 rpcs_rcvd)
ok run p
deadline=$(( $(ul__now_ms) + 30000 ))
while :; do
	sst_json n1; sst_json n2
	(( $(field n1 rpcs_rcvd) > r1 + 5 && $(field n2 rpcs_rcvd) > r2 + 5 )) && break
	(( $(ul__now_ms) < deadline )) || ul_fail "pings did not reach both servers: n1 $(field n1 rpcs_rcvd) (from $r1), n2 $(field n2 rpcs_rcvd) (from $r2)"
	sleep 0.05
done

ul_step "stat: lst's selections, --count, NIDs"
ok stat clients --count 2 --delay 0.2
[[ $(grep -c '^\[LNet Rates of clients\]$' "$UL_TMP/o") == 2 && $(grep -c 'LNet in (into the node)' "$UL_TMP/o") == 4 ]] ||
	ul_fail "stat --count 2: $(cat "$UL_TMP/o")"
grep -Eq '^\[R\] Avg: [0-9]+ msg/s Min: [0-9]+ msg/s Max: [0-9]+ msg/s$' "$UL_TMP/o" || ul_fail "stat rates: $(cat "$UL_TMP/o")"
ok stat --bw --read --avg --mbs clients --delay 0.2
cat > "$UL_TMP/want" <<'EOF'
[LNet Bandwidth of clients]
[R] Avg: X MB/s
EOF
sed -E 's/Avg: [0-9.]+ /Avg: X /' "$UL_TMP/o" > "$UL_TMP/got"
ul_diff "$UL_TMP/want" "$UL_TMP/got" "stat --bw --read --avg --mbs"
ok stat --rate --write --max "$N1" "$N2" --delay 0.2 --timeout 2
{ grep -Eq '^\[W\] Max: [1-9][0-9]* msg/s$' "$UL_TMP/o" && ! grep -q '^\[R\]' "$UL_TMP/o"; } || ul_fail "stat NIDs: $(cat "$UL_TMP/o")"
want 1 "node $N9 is not in session adm" stat "$N9"
ok stop p

ul_step "show_error: a corrupted transfer is one error node"
ok add_batch bad
ok add_test --batch bad --from servers --to clients brw read size=4096 check=full
"$SST" --node "$(ul_sock n1)" inject --count 1 --at 100 >/dev/null || ul_fail "inject n1"
"$SST" --node "$(ul_sock n2)" inject --count 1 --at 100 >/dev/null || ul_fail "inject n2"
ok run bad
deadline=$(( $(ul__now_ms) + 30000 ))
until lst "$UL_TMP/se" show_error --session servers; grep -q 'its client tests: .*mismatch [1-9]' "$UL_TMP/se"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "show_error: no mismatch: $(cat "$UL_TMP/se" "$UL_TMP/se.err")"
	sleep 0.05
done
[[ $UL_STATUS == 1 ]] || ul_fail "show_error with errors: status $UL_STATUS"
{ grep -q "^$N3: \[Session [0-9]* brw errors, [0-9]* ping errors\] \[RPC: [0-9]* errors, [0-9]* dropped, [0-9]* expired\]$" "$UL_TMP/se" &&
	grep -q '^total 1 error node(s) in group servers$' "$UL_TMP/se"; } || ul_fail "show_error: $(cat "$UL_TMP/se")"
ul_one_line "$UL_TMP/se.err" "^ulnet-selftest: show_error: 1 node\(s\) with errors"
lst "$UL_TMP/se2" show_error servers # the node-wide RPC counters count too: still the one node
{ [[ $UL_STATUS == 1 ]] && grep -q "^$N3: .*mismatch [1-9]" "$UL_TMP/se2" && grep -q '^total 1 error node(s) in group servers$' "$UL_TMP/se2"; } ||
	ul_fail "show_error without --session: status $UL_STATUS: $(cat "$UL_TMP/se2")"
lst "$UL_TMP/s" stop bad
[[ $UL_STATUS == 1 ]] || ul_fail "stop bad: status $UL_STATUS"
want 1 "node $N9 is not in session adm" show_error "$N9"

ul_step "bad input: one message, exit 2, nothing changed"
for cmd in "ping" "ping clients --nodes $N1" "ping --nodes 1.2.3.4@nonet" "del_group" "del_group a b" \
	"update_group clients" "update_group clients --refresh --remove $N1" "update_group clients --clean maybe" \
	"update_group clients --remove" "show_error" "show_error clients $N1" "query" "query b --test 0" "query b --loop 0" \
	"query b --delay 0" "list_batch b --test" "list_batch --test 1" "stat clients --count 0" "stat clients --bogus" \
	"stat clients --delay 99" "run b --timeout 0" "run b --timeout x" \
	"add_test --batch b --from clients --to servers --distribute 0:1 ping" \
	"add_test --batch b --from clients --to servers --distribute all:1 ping" \
	"add_test --batch b --from clients --to servers --distribute 2:" "--wait 0 show_session"; do
	# shellcheck disable=SC2086
	lst "$UL_TMP/e" $cmd
	[[ $UL_STATUS == 2 ]] || ul_fail "'$cmd': status $UL_STATUS, want 2: $(cat "$UL_TMP/e" "$UL_TMP/e.err")"
	[[ $(grep -c '^ulnet-selftest: ' "$UL_TMP/e.err") == 1 ]] || ul_fail "'$cmd': want one message: $(cat "$UL_TMP/e.err")"
done
ok list_batch b
grep -q '^batch b: 1 test(s), idle$' "$UL_TMP/o" || ul_fail "a refused add_test changed batch b: $(cat "$UL_TMP/o")"

ul_step "--wait: a silent ulnetd is given up on, exit 3 (an lst word and a one-shot test)"
kill -STOP "$(ul_pid n6)"
t0=$(ul__now_ms)
ul_run "$UL_TMP/w" "$UL_TMP/w.err" timeout 30 "$SST" --node "$(ul_sock n6)" --wait 1 show_session
st_lst=$UL_STATUS
ul_run "$UL_TMP/w1" "$UL_TMP/w1.err" timeout 30 "$SST" --node "$(ul_sock n6)" --wait 1 ping --from "$N6" --to "$N6" --duration 1
st_one=$UL_STATUS
t1=$(ul__now_ms)
kill -CONT "$(ul_pid n6)"
[[ $st_lst == 3 && $st_one == 3 ]] || ul_fail "--wait on a stopped ulnetd: status $st_lst and $st_one: $(cat "$UL_TMP/w.err" "$UL_TMP/w1.err")"
ul_one_line "$UL_TMP/w.err" "^ulnet-selftest: show_session: no word from ulnetd at .* for 1 s"
ul_one_line "$UL_TMP/w1.err" "^ulnet-selftest: no word from ulnetd at .* for 1 s"
(( t1 - t0 < 15000 )) || ul_fail "two --wait 1 took $(( t1 - t0 )) ms"

ul_step "every node still answers; end_session"
ok ping late # n6 answers again (and is no longer known down)
[[ $(grep -c ' active$' "$UL_TMP/o") == 2 ]] || ul_fail "ping late after SIGCONT: $(cat "$UL_TMP/o")"
for n in n1 n2 n3 n4 n6; do
	ul_ctl "$n" net show >/dev/null || ul_fail "$n does not answer"
done
ok del_group late # n6 is in no other group: it leaves the session; n1 (in clients) stays
grep -q '^group late deleted (1 node(s) left the session)$' "$UL_TMP/o" || ul_fail "del_group late: $(cat "$UL_TMP/o")"
ul_ctl n6 call selftest stat > "$UL_TMP/st6" || ul_fail "stat n6"
grep -q 'session: False' "$UL_TMP/st6" || ul_fail "n6 still in the session after del_group: $(cat "$UL_TMP/st6")"
ok ping clients
grep -q "^$N1 active$" "$UL_TMP/o" || ul_fail "n1 left with group late: $(cat "$UL_TMP/o")"
ok end_session
for n in n1 n2 n3 n6; do
	ul_ctl "$n" call selftest stat > "$UL_TMP/st" || ul_fail "stat $n"
	grep -q 'session: False' "$UL_TMP/st" || ul_fail "$n still in a session: $(cat "$UL_TMP/st")"
done

ul_step "a console node stopping in the middle of stat --count: it stops within one sample"
"$SST" --node "$(ul_sock n6)" new_session z >/dev/null || ul_fail "n6 new_session"
"$SST" --node "$(ul_sock n6)" add_group zz "$N6" >/dev/null || ul_fail "n6 add_group"
: > "$UL_TMP/long"
timeout 60 "$SST" --node "$(ul_sock n6)" stat zz --count 1000 --delay 1 > "$UL_TMP/long" 2> "$UL_TMP/long.err" &
long=$!
deadline=$(( $(ul__now_ms) + 30000 ))
until grep -q '^\[LNet Rates of zz\]' "$UL_TMP/long"; do # the first sample is out: the loop is under way
	(( $(ul__now_ms) < deadline )) || ul_fail "stat --count: no first sample: $(cat "$UL_TMP/long" "$UL_TMP/long.err")"
	sleep 0.05
done
ul_stop_node n6 TERM 10
UL_STATUS=0
wait "$long" || UL_STATUS=$?
[[ $UL_STATUS == 3 ]] || ul_fail "stat --count on a stopping node: status $UL_STATUS: $(cat "$UL_TMP/long.err")"
exit 0
