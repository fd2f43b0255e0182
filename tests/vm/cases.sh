# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# The VM lane's cases, run inside each guest (busybox sh) from this node ($NAME, $ME) to the peer
# ($PEERNAME, $PEER; $ME1 and $PEER1 on o2ib1); sourced by tests/vm/init.sh. Every case prints
# exactly one line:
#   VMLANE CASE <from>-><to> <net> <what> ok|FAIL bytes=<n> errors=<n> [detail]
# and the host (tests/vm/run) counts them. "VMLANE PLAN <n>" first says how many will follow, so a
# guest that dies midway shows as missing cases, not as fewer passes.

SOCK=/run/ulnet.sock

# vm_me NET / vm_peer NET: this node's and the peer's address on NET (o2ib1 has its own subnet)
vm_me() { if [ "$1" = o2ib1 ]; then echo "$ME1"; else echo "$ME"; fi; }
vm_peer() { if [ "$1" = o2ib1 ]; then echo "$PEER1"; else echo "$PEER"; fi; }

# one case line; status ok|FAIL
vm_case() { echo "VMLANE CASE $NAME->$PEERNAME $*"; }

# The driver of tests/integration/scenarios.sh (the scenarios the shm integration tests run too):
# node "me" is this guest's ulnetd, node "peer" the other VM's (reached only over the link: the
# scenarios run every command on their first node, and each VM takes its turn as that node); the
# net is $SC_NET; a case is one "VMLANE CASE" line.
# shellcheck disable=SC2034 # read by scenarios.sh
SC_TMP=/tmp
sc_ctl() { [ "$1" = me ] || return 2; shift; ulnetctl --node $SOCK "$@"; }
sc_sst() { [ "$1" = me ] || return 2; shift; ulnet-selftest --node $SOCK "$@"; }
# (SC_NET routed: from the tcp1-only node behind this router, init.sh, to the peer's o2ib NID)
sc_nid()
{
	case "$SC_NET:$1" in
	routed:me) echo "$RT_NID" ;;
	routed:*) echo "$PEER@o2ib" ;;
	*:me) echo "$(vm_me "$SC_NET")@$SC_NET" ;;
	*) echo "$(vm_peer "$SC_NET")@$SC_NET" ;;
	esac
}
sc_case()
{
	vm_case "$2 $1 $3"
	[ "$1" = ok ] || tail -8 /tmp/ulnetd.log | sed 's/^/VMLANE LOG ulnetd: /'
}
# a brw case's note: this node's RDMA plan for it (vm_plan); LU-5718's net must have negotiated its
# 16 fragments (when the tree reports it)
sc_brw_note()
{
	local plan
	plan=$(vm_plan "$SC_NET" "$3")
	if [ -n "${WANT_MAX_FRAGS:-}" ] && [ -n "$plan" ]; then
		case "$plan" in
		*"max_frags $WANT_MAX_FRAGS") ;;
		*) echo "$plan (want max_frags $WANT_MAX_FRAGS)"; return 1 ;;
		esac
	fi
	echo "$plan"
}
sc_mark() { vm_plan_baseline "$SC_NET"; }
# the kill: the host SIGKILLs the peer's qemu, and boots it again, when the console asks
sc_kill() { echo "VMLANE KILL-PEER"; }
sc_restart() { echo "VMLANE PEER-RESTART"; }
sc_log() { echo /tmp/ulnetd.log; }
# shellcheck source=tests/integration/scenarios.sh
. /etc/vmlane/scenarios.sh

# wait (up to 120 s: the other VM may boot slower) until the peer answers a ping on NET
vm_wait_peer()
{
	local net=$1 i=0
	until ulnetctl --node $SOCK ping "$(vm_peer $net)@$net" --count 1 --timeout_ms 1000 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 120 ] || return 1
		sleep 1
	done
}

# vm_plan NET SIZE: what this node's o2ib LND did with the peer since the last call, for transfers of
# SIZE's bucket (peer show -v: RDMA counters by size, and the negotiated max_frags), e.g.
# "plan: source 4 transfers 4 WRs, sink 0, bounces 4, max_frags 16"; nothing when the tree has no
# such counters. Each case's own data goes one way, so the console node is the source of a write and
# the sink of a read.
vm_plan()
{
	local net=$1 size=$2 b=1048576 now prev
	case $net in tcp | routed) return 0 ;; esac
	[ "$size" -gt 262144 ] || b=262144
	[ "$size" -gt 65536 ] || b=65536
	[ "$size" -gt 4096 ] || b=4096
	now=$(ulnetctl --node $SOCK peer show -v --nid "$(vm_peer $net)@$net" --json 2>/dev/null | tr -d ' \n' |
		awk -v B=$b '
		function get(s, f) { if (match(s, "\"" f "\":[0-9]+")) return substr(s, RSTART + length(f) + 3, RLENGTH - length(f) - 3); return 0 }
		{
			mf = get($0, "max_frags")
			n = split($0, part, "\"max_bytes\":")
			for (i = 2; i <= n; i++)
				if (index(part[i], B ",") == 1)
					print get(part[i], "transfers"), get(part[i], "wrs"), get(part[i], "sinks"), get(part[i], "bounces"), mf
		}')
	[ -n "$now" ] || return 0
	prev=$(cat /tmp/plan.$net.$b 2>/dev/null || echo "0 0 0 0 0")
	echo "$now" >/tmp/plan.$net.$b
	echo "$now $prev" | awk '{ printf "plan: source %d transfers %d WRs, sink %d, bounces %d, max_frags %d\n", $1 - $6, $2 - $7, $3 - $8, $4 - $9, $5 }'
}

# vm_plan_baseline NET: start counting from here (the peer's turn used this node's counters too)
vm_plan_baseline()
{
	local s
	for s in 1 4097 65537 262145; do
		vm_plan "$1" $s >/dev/null
	done
}

# The verbs group: test_verbs_ops (tests/fabric: the verbs provider's operations and errors on one
# device connected to itself) on this node's rxe0 at $ME, so on both kernels (4 KiB and 64 KiB
# pages). One case line per cmocka test; the count ($VERBS_TESTS, vmlane.verbs_tests) comes from
# the host, so a crash shows as missing cases. Runs before the turns on both nodes (its ports are
# 20988 and up; ulnetd's 987 is not touched).
vm_cases_verbs_net() { :; }
vm_cases_verbs_count() { echo "${VERBS_TESTS:-0}"; }
vm_cases_verbs()
{
	local out=/tmp/verbs_ops.log st=0 t r
	ULNET_VERBS_ADDR=$ME test_verbs_ops >$out 2>&1 || st=$?
	# cmocka: "[       OK ] name", "[  FAILED  ] name", "[  ERROR   ] name", "[  SKIPPED ] name"
	sed -En 's/^\[ *(OK|FAILED|ERROR|SKIPPED) *\] (test_[a-z_0-9]+)$/\1 \2/p' $out | sort -u -k2,2 |
		while read -r r t; do
			if [ "$r" = OK ] && [ $st = 0 ]; then
				echo "VMLANE CASE $NAME->$NAME rxe0 test_verbs_ops $t ok bytes=0 errors=0"
			else
				echo "VMLANE CASE $NAME->$NAME rxe0 test_verbs_ops $t FAIL bytes=0 errors=1 $r (exit $st): $(grep -v '^\[' $out | grep -m3 . | tr '\n' ' ' | head -c 300)"
			fi
		done
}

# the tcp set (scenarios.sh): ping, then brw write and read at a page-straddling offset and an odd one
TCP_BRW="1048576:0 4097:1 1044479:4097"
vm_cases_tcp_net() { echo tcp; }
vm_cases_tcp_count() { echo $((1 + 2 * $(echo $TCP_BRW | wc -w))); }
vm_cases_tcp()
{
	local so op
	SC_NET=tcp
	sc_ping me peer
	for so in $TCP_BRW; do
		for op in write read; do
			sc_brw me peer $op "${so%%:*}" "${so##*:}"
		done
	done
}

# the o2ib set (issue 10): sc_o2ib of scenarios.sh, unchanged from the shm integration test
# (test_o2ib_selftest_brw.sh): ping, brw write and read at offsets 0, 1, 4097, 65537 of sizes 1,
# 4097, 65536, 1 MiB - offset and 1 MiB, 1 s of 1 MiB writes 8 in flight, the RDMA counters of
# peer show -v, selftest ping
vm_cases_o2ib_net() { echo o2ib; }
vm_cases_o2ib_count() { sc_o2ib_count; }
vm_cases_o2ib()
{
	SC_NET=o2ib
	sc_o2ib me peer
}

# vm_ping_1m NET OFFSET: ping, then 1 MiB at OFFSET written and read (each case's plan its own)
vm_ping_1m()
{
	SC_NET=$1
	sc_ping me peer
	vm_plan_baseline "$1"
	sc_brw me peer write 1048576 "$2"
	sc_brw me peer read 1048576 "$2"
}

# Routing (issue 30), run by the first node only: the tcp1-only node behind it (127.0.0.2@tcp1, a
# second ulnetd in this guest, init.sh) reaches the peer's o2ib NID through this node's ulnetd (NIs
# on tcp1 127.0.0.1, o2ib and tcp; routing enabled), and the peer answers through its route to tcp1
# via this node's o2ib NID: ping, brw write and read of 1 MiB at offset 4097 and of an odd size at an
# odd offset, check=full, 0 errors (the scenarios' sc_ping and sc_brw from the tcp1 node's socket);
# then the router's counters: every byte of those forwarded, no drop.
RT_NID=127.0.0.2@tcp1 RT_SOCK=/run/ulnet-tcp1.sock
RT_BRW="1048576:4097 4097:1"
vm_cases_routed_net() { echo o2ib; }
vm_cases_routed_count() { if [ "$FIRST" = 1 ]; then echo $((2 + 2 * $(echo $RT_BRW | wc -w))); else echo 0; fi; }
vm_cases_routed()
{
	local so op i=0 min=0 out=/tmp/routing.json f drops t0
	[ "$FIRST" = 1 ] || return 0
	t0=$(date +%s)
	SC_NET=routed
	# the peer's route to tcp1 is up once its checker has heard from this node (every 5 s)
	until ulnetctl --node $RT_SOCK ping "$PEER@o2ib" --count 1 --timeout_ms 1000 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 30 ] || break
		sleep 1
	done
	SOCK=$RT_SOCK
	sc_ping me peer
	for so in $RT_BRW; do
		for op in write read; do
			sc_brw me peer $op "${so%%:*}" "${so##*:}"
			min=$((min + SC_BRW_COUNT * ${so%%:*}))
		done
	done
	SOCK=/run/ulnet.sock
	# forwarded: msgs bytes, then every drop counter, as routing show --json has them
	ulnetctl --node $SOCK routing show --json >$out 2>&1
	f=$(tr -d ' \n' <$out | sed -n 's/.*"forwarded":{"msgs":\([0-9]*\),"bytes":\([0-9]*\),"drops":{\([^}]*\)}.*/\1 \2 \3/p')
	drops=$(echo "${f#* * }" | tr ',' '\n' | sed 's/.*://' | awk '{ n += $1 } END { print n + 0 }')
	# shellcheck disable=SC2086 # the two counters as $1 $2
	set -- $f
	if [ -n "$f" ] && [ "${2:-0}" -ge $min ] && [ "$drops" = 0 ]; then
		vm_case "routed router forwarding ok bytes=$2 errors=0 msgs=$1 memory_max_seen=$(sc__json $out memory_max_seen) (at least $min bytes forwarded, no drop; the group took $(($(date +%s) - t0)) s)"
	else
		vm_case "routed router forwarding FAIL bytes=${2:-0} errors=${drops:-?} want >= $min bytes and no drop: $(head -c 400 $out)"
	fi
}

# LU-5718's shape on its own net (o2ib1, NIs limited to 16 RDMA fragments and max_send_sge 1):
# 1 MiB at an odd offset, both ways of the data
vm_cases_lu5718_net() { echo o2ib1; }
vm_cases_lu5718_count() { echo 3; }
vm_cases_lu5718()
{
	WANT_MAX_FRAGS=16
	vm_ping_1m o2ib1 7
	WANT_MAX_FRAGS=
}

# The peer dies mid-transfer (run by the first node, after both turns): sc_peer_killed of
# scenarios.sh (test_o2ib_peer_killed.sh runs it on shm): a 20 s 1 MiB brw write over o2ib (RPC
# timeout 20 s, the NI's o2ib timeout 20 s, keepalive 2 s: init.sh says why) while the host SIGKILLs the peer's VM (asked by
# "VMLANE KILL-PEER": no goodbye on the link); the peer must show down within the timeout + 5 s,
# the brw fail classified; then the host boots the peer again ("VMLANE PEER-RESTART"): ping, peer
# show up, 1 MiB again. Then the peer, booted with only the back group, takes the turn and runs its
# cases towards this node (this node serves again).
KILL_TIMEOUT=20
vm_cases_kill_net() { echo o2ib; }
vm_cases_kill_count() { if [ "$FIRST" = 1 ]; then sc_peer_killed_count; else echo 0; fi; }
vm_cases_kill() { :; } # runs at the end of vm_cases (vm_kill)
vm_kill()
{
	SC_NET=o2ib
	sc_peer_killed me peer $KILL_TIMEOUT 20
}
# the peer booted again after the kill: its cases towards the node that saw it die (that node
# serves again): ping, 1 MiB written and read at an odd offset
vm_cases_back_net() { echo o2ib; }
vm_cases_back_count() { echo 3; }
vm_cases_back() { vm_ping_1m o2ib 4097; }

# The bench (no cases: "VMLANE BENCH" lines, never a pass or a fail): 1 MiB brw writes over o2ib
# against perftest's ib_write_bw between the same two rxe devices, the same shape: 1 MiB messages
# from this node to the peer, BENCH_DEPTH in flight (brw --concurrency, ib_write_bw -t), for
# BENCH_SECS each; after 1 s of brw writes not counted (the connection and registrations are made:
# perftest connects before it starts its clock), BENCH_ROUNDS rounds, each measuring both back to
# back (the order alternating), and the medians: their ratio, and the median of the rounds' ratios. perftest's "MB/sec" are MiB/s (2^20 bytes), compared with brw's MiBps.
# ib_write_bw can only busy-poll (no -e for WRITEs), which competes with rxe's softirq work on a
# 1-vCPU guest: that is the baseline's noise. The peer starts one server per round when its cases
# start (vm_bench_serve).
BENCH_ROUNDS=5 BENCH_SECS=5 BENCH_DEPTH=8
PERF_ARGS="-R -F -s 1048576 -t $BENCH_DEPTH -D $BENCH_SECS"
# vm_nice19 CMD...: CMD at nice 19 (busybox has renice, no nice), so that perftest's busy polling
# yields the vCPU to rxe's softirq work (ksoftirqd runs at nice 0, as ulnetd does)
vm_nice19() { sh -c 'renice -n 19 -p $$ >/dev/null && exec "$@"' vm_nice19 "$@"; }
vm_cases_bench_net() { echo o2ib; }
vm_cases_bench_count() { echo 0; }
vm_bench_serve()
{
	{
		r=0
		while [ $r -lt $BENCH_ROUNDS ]; do
			vm_nice19 ib_write_bw $PERF_ARGS
			r=$((r + 1))
		done
	} >/tmp/perf.log 2>&1 &
}
# vm_perf: ib_write_bw against the peer's server (retried while it is not listening yet); prints the
# average MB/sec (MiB/s) of the result row (bytes, iterations, peak, average, msg rate)
vm_perf()
{
	local i=0
	until vm_nice19 ib_write_bw $PERF_ARGS "$PEER" >/tmp/ib_write_bw.log 2>&1; do
		i=$((i + 1))
		[ $i -lt 10 ] || break
		sleep 1
	done
	awk '$1 == 1048576 && NF >= 5 {print $4}' /tmp/ib_write_bw.log | tail -1
}
vm_ulnet_bw()
{
	ulnet-selftest --node $SOCK --json brw write --from "$ME@o2ib" --to "$PEER@o2ib" --size 1048576 \
		--check none --concurrency $BENCH_DEPTH --duration $BENCH_SECS --timeout 30 >/tmp/bench.json 2>&1
	sc__json /tmp/bench.json MiBps
}
vm_ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?"}'; }
vm_median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "?"}'; }
vm_cases_bench()
{
	local r=1 u w us= ws= rs=
	[ "$FIRST" = 1 ] || return 0
	ulnet-selftest --node $SOCK --json brw write --from "$ME@o2ib" --to "$PEER@o2ib" --size 1048576 \
		--check none --concurrency $BENCH_DEPTH --duration 1 --timeout 30 >/dev/null 2>&1
	while [ $r -le $BENCH_ROUNDS ]; do
		if [ $((r % 2)) = 1 ]; then
			u=$(vm_ulnet_bw)
			w=$(vm_perf)
		else
			w=$(vm_perf)
			u=$(vm_ulnet_bw)
		fi
		echo "VMLANE BENCH round $r: brw write ${u:-?} MiB/s (RPC latency p50 $(sc__json /tmp/bench.json p50) max $(sc__json /tmp/bench.json max) us), ib_write_bw ${w:-?} MiB/s, ratio $(vm_ratio "$u" "$w")"
		[ -n "$w" ] || sed 's/^/VMLANE LOG ib_write_bw: /' /tmp/ib_write_bw.log | tail -3
		[ -n "$u" ] || sed 's/^/VMLANE LOG brw: /' /tmp/bench.json | tail -3
		us="$us ${u:-}" ws="$ws ${w:-}" rs="$rs $(vm_ratio "$u" "$w")"
		r=$((r + 1))
	done
	u=$(echo $us | vm_median)
	w=$(echo $ws | vm_median)
	echo "VMLANE BENCH $NAME->$PEERNAME o2ib 1 MiB writes, $BENCH_DEPTH in flight, $BENCH_SECS s, medians of $BENCH_ROUNDS rounds: brw write $u MiB/s, ib_write_bw $w MiB/s: ratio $(vm_ratio "$u" "$w"); median of the rounds' ratios $(echo $rs | vm_median); goal 0.9"
}

# vm_turn_wait / vm_turn_give: the turn token, a TCP connection to port 7777 inside the guest link
vm_turn_wait() { timeout 400 nc -l -p 7777 >/dev/null 2>&1 || echo "VMLANE ERROR $NAME: no turn from $PEERNAME"; }
vm_turn_give()
{
	local i=0
	until echo turn | nc "$PEER" 7777 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "VMLANE ERROR $NAME: cannot give $PEERNAME its turn"; return; }
		sleep 0.2
	done
}

# vm_cases LIST: comma-separated groups (verbs, tcp, o2ib, routed, lu5718, kill, bench, back). The two nodes
# take turns ($FIRST=1 goes first, then hands over), so each case's counters and plan are its own;
# with kill the turn comes back to the first node for vm_kill, which then hands it to the peer booted
# again (its only group: back).
vm_cases()
{
	local groups total=0 g net kill=
	groups=$(echo "$1" | tr ',' ' ')
	for g in $groups; do
		total=$((total + $(vm_cases_${g}_count)))
		[ $g != kill ] || kill=1
	done
	echo "VMLANE PLAN $total"
	[ -n "$groups" ] || return 0
	case " $groups " in *" bench "*) [ "$FIRST" = 1 ] || vm_bench_serve ;; esac
	case " $groups " in *" verbs "*) vm_cases_verbs ;; esac
	[ "$FIRST" = 1 ] || vm_turn_wait
	for g in $groups; do
		[ $g != kill ] && [ $g != verbs ] || continue
		net=$(vm_cases_${g}_net)
		if ! vm_wait_peer "$net"; then
			echo "VMLANE ERROR $NAME: $PEERNAME@$net does not answer ping after 120 s"
			continue
		fi
		vm_cases_$g
	done
	if [ "$FIRST" = 1 ]; then
		vm_turn_give
		if [ -n "$kill" ]; then
			vm_turn_wait
			vm_kill
			vm_turn_give
		fi
	elif [ -n "$kill" ]; then
		vm_turn_give
	fi
}
