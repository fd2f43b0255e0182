#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lst console at scale (issue #11): one console ulnetd and 64 selftest nodes, a quarter of them
# down: 12 silent addresses (a peer that accepts the connection and never answers: each costs the RPC
# timeout) and 4 ulnetd killed after they joined (refused at once). Every lst command is driven once
# and its result checked (48 nodes active, 16 down, no hang).
# The 1 s goal is not asserted: the project never times a test, and on a loaded 2-core machine a
# process waits seconds for a CPU outside the console (a 'stat' seen taking 6.8 s ran 0.66 s from exec
# to exit). Each command's outcome is asserted (status, output), and the per-invocation timeout (60 s)
# only guards against a hang. What the console measured is printed for a reader: ulnetd logs a
# control command slower than 1 s, and only the one add_group that finds the silent nodes should
# appear there (it waits one RPC timeout for them, as the kernel console's add_group waits for its
# session-join transaction; from then on they are known down and no command waits on them), as is
# the wall-clock time of each invocation. stat's own sampling interval (--delay) is kept short.
# Loopback block 127.160.x.x: console 127.160.0.1, nodes 127.160.1.N, silent addresses 127.160.2.N.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 160

NLIVE=48 NKILL=4 NSILENT=12
NCLI=8 # brw and ping clients, and as many servers: 24 looping clients starve a loaded 2-core machine
RPC_TIMEOUT=2 # s: new_session --timeout; a loaded machine needs a live node to answer within it
node_yaml() # node_yaml ADDR
{
	printf 'net:\n    - net type: tcp\n      local NI(s):\n        - nid: %s@tcp\n          interfaces: {0: lo}\n' "$1"
}

ul_step "a silent peer on $NSILENT addresses: accepts, never answers"
"$UL_PYTHON" - "$NSILENT" >"$UL_TMP/silent.out" 2>&1 <<'PY' &
import select, socket, sys
ls = []
for i in range(1, int(sys.argv[1]) + 1):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.160.2.%d" % i, 988))
    s.listen(16)
    ls.append(s)
print("listening", flush=True)
held = []
while True:
    for s in select.select(ls, [], [])[0]:
        held.append(s.accept()[0])
PY
SILENT_PID=$!
UL_ATEXIT+=("kill $SILENT_PID 2>/dev/null")
for _ in $(seq 200); do grep -q listening "$UL_TMP/silent.out" && break; sleep 0.05; done
grep -q listening "$UL_TMP/silent.out" || ul_fail "silent peer did not start: $(cat "$UL_TMP/silent.out")"

ul_step "start the console and $((NLIVE + NKILL)) nodes"
ul_launch_node c < <(node_yaml 127.160.0.1)
for i in $(seq "$((NLIVE + NKILL))"); do
	ul_launch_node "n$i" < <(node_yaml "127.160.1.$i")
done
ul_wait_ready c 30
for i in $(seq "$((NLIVE + NKILL))"); do
	ul_wait_ready "n$i" 30
done
# on a cluster every node has CPUs of its own; here 52 share 2 cores with the console, and 16 of them
# run brw flat out once the batch runs. They run at the lowest priority so that what the wall clock
# shows is the console's answer, not the console and the tool queued behind the nodes (the console's
# own time is printed, below, in either case)
for i in $(seq "$((NLIVE + NKILL))"); do
	renice -n 19 -p $(ls "/proc/${UL_PID[n$i]}/task") >/dev/null || ul_fail "renice n$i"
done
export ULNET_NODE
ULNET_NODE=$(ul_sock c)

LIVE=() KILL=() SILENT=() CLIENTS=() SERVERS=()
for i in $(seq "$NLIVE"); do
	LIVE+=("127.160.1.$i@tcp")
	if (( i <= NCLI )); then CLIENTS+=("127.160.1.$i@tcp"); elif (( i <= 2 * NCLI )); then SERVERS+=("127.160.1.$i@tcp"); fi
done
for i in $(seq "$((NLIVE + 1))" "$((NLIVE + NKILL))"); do KILL+=("127.160.1.$i@tcp"); done
for i in $(seq "$NSILENT"); do SILENT+=("127.160.2.$i@tcp"); done
ALL=("${LIVE[@]}" "${KILL[@]}" "${SILENT[@]}")
(( ${#ALL[@]} == 64 )) || ul_fail "want 64 nodes, have ${#ALL[@]}"

TIMES=()
# lst WANT_STATUS ARGS...: one console invocation, timed; output in $UL_TMP/o and $UL_TMP/o.err
lst()
{
	local want=$1 t0 t1 ms name
	shift
	name=$1
	[[ $name == --json ]] && name=$2
	t0=${EPOCHREALTIME/./}
	ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$SST" "$@"
	t1=${EPOCHREALTIME/./}
	ms=$(( (t1 - t0) / 1000 ))
	TIMES+=("$ms")
	printf '   %-12s %6d ms%s\n' "$name" "$ms" "$( (( ms > 1000 )) && echo '  (over the 1 s goal)')" >&2
	[[ $UL_STATUS == "$want" ]] ||
		ul_fail "'$*': status $UL_STATUS, want $want: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"
}
count() { grep -c -- "$1" "$UL_TMP/o"; }

ul_step "new_session, add_group with all 64 (the $NSILENT silent nodes are reported down)"
lst 0 new_session scale --timeout "$RPC_TIMEOUT"
lst 0 add_group all "${ALL[@]}"
grep -q "warning: $NSILENT of 64 node(s) did not answer and are down in group all" "$UL_TMP/o" ||
	ul_fail "add_group all: $(cat "$UL_TMP/o")"
lst 0 add_group clients "${CLIENTS[@]}"
lst 0 add_group servers "${SERVERS[@]}"

ul_step "kill $NKILL nodes that joined"
for i in $(seq "$((NLIVE + 1))" "$((NLIVE + NKILL))"); do
	ul_stop_node "n$i" KILL 2>/dev/null # not bash's "Killed" line
done

ul_step "list, batch, tests"
lst 0 list_group
{ grep -q '^all: 64 node' "$UL_TMP/o" && grep -q "^clients: $NCLI node" "$UL_TMP/o"; } ||
	ul_fail "list_group: $(cat "$UL_TMP/o")"
lst 0 list_group all
[[ $(count ' active$') == "$NLIVE" && $(count ' down$') == $((NKILL + NSILENT)) ]] ||
	ul_fail "list_group all: want $NLIVE active, $((NKILL + NSILENT)) down: $(cat "$UL_TMP/o")"
for a in "${KILL[@]}" "${SILENT[@]}"; do
	grep -q "^$a down$" "$UL_TMP/o" || ul_fail "list_group all: $a not down: $(cat "$UL_TMP/o")"
done
lst 0 add_batch b
lst 0 add_test --batch b --from clients --to servers brw write size=4k check=simple
lst 0 add_test --batch b --from clients --to servers ping
lst 0 list_batch
grep -q '^b: 2 test(s), idle' "$UL_TMP/o" || ul_fail "list_batch: $(cat "$UL_TMP/o")"
lst 0 show_session
grep -q "session scale: .*, $((NLIVE + NKILL)) node(s), 3 group(s), 1 batch(es)" "$UL_TMP/o" ||
	ul_fail "show_session: $(cat "$UL_TMP/o")"

ul_step "run, stat, list_batch, stop"
lst 0 run b
grep -q "running on $NCLI client node" "$UL_TMP/o" || ul_fail "run: $(cat "$UL_TMP/o")"
lst 1 stat all --delay 0.5
[[ $(count 'LNet in (into the node)') == "$NLIVE" && $(count ': no answer') == $((NKILL + NSILENT)) ]] ||
	ul_fail "stat all: want $NLIVE answers and $((NKILL + NSILENT)) without: $(cat "$UL_TMP/o")"
lst 0 stat clients --delay 0.5
[[ $(count 'its client tests since run: ') == $NCLI ]] || ul_fail "stat clients: $(cat "$UL_TMP/o")"
lst 0 list_batch
grep -q '^b: 2 test(s), running' "$UL_TMP/o" || ul_fail "list_batch: $(cat "$UL_TMP/o")"
lst 0 --json stop b
[[ $(wc -l < "$UL_TMP/o") == $NCLI ]] || ul_fail "stop: want one result per client: $(cat "$UL_TMP/o")"
"$UL_PYTHON" - "$UL_TMP/o" <<'PY' || ul_fail "stop: $(cat "$UL_TMP/o")"
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if all(r["ok"] and r["rpcs"] > 0 for r in rs) else 1)
PY

ul_step "end_session: the killed nodes are reported, the live ones leave"
lst 0 end_session
grep -q "session scale ended ($((NLIVE + NKILL)) node(s), some unreachable)" "$UL_TMP/o" ||
	ul_fail "end_session: $(cat "$UL_TMP/o")"
[[ $(count '^warning: ') == "$NKILL" ]] || ul_fail "end_session: want $NKILL warnings: $(cat "$UL_TMP/o")"
for i in $(seq "$NLIVE"); do
	ul_ctl "n$i" call selftest stat > "$UL_TMP/st" || ul_fail "stat n$i"
	grep -q 'session: False' "$UL_TMP/st" || ul_fail "n$i still in a session: $(cat "$UL_TMP/st")"
done

# printed, not asserted (see the top): the commands the console logged as slower than 1 s
slow=$(grep "answered in" "$(ul_log c)" || true)
printf 'console commands over 1 s (only add_group all expected): %s\n' "${slow:-none}" >&2

# per-command wall-clock times, as the shell saw them
sorted=$(printf '%s\n' "${TIMES[@]}" | sort -n)
n=${#TIMES[@]}
median=$(sed -n "$(( (n + 1) / 2 ))p" <<<"$sorted")
max=$(tail -n1 <<<"$sorted")
over=$(awk '$1 > 1000' <<<"$sorted" | wc -l)
printf 'lst at scale: 64 nodes (%d live, %d killed, %d silent), RPC timeout %d s: %d commands, median %d ms, max %d ms, %d over the 1 s goal wall-clock (stat includes its 0.5 s sampling; finding a silent node costs the RPC timeout once)\n' \
	"$NLIVE" "$NKILL" "$NSILENT" "$RPC_TIMEOUT" "$n" "$median" "$max" "$over"
exit 0
