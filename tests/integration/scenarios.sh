# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC3043 # local: busybox ash, dash and bash all have it
# The o2ib scenarios (and the tcp lane's ping and brw), one implementation for every runner: the
# integration tests run them between two ulnetd on the shm provider on 127.x (bash, on the host:
# test_o2ib_ping.sh, test_o2ib_selftest_brw.sh, test_o2ib_peer_killed.sh) and the VM lane runs the same functions inside each
# guest (busybox sh: tests/vm/cases.sh) between the x86_64 and the ppc64le node on the verbs
# provider. So this file is POSIX sh, parses JSON with sed/awk and knows nothing about providers,
# addresses or processes: a scenario runs from node A towards node B through its runner's driver.
#
# The driver (functions the runner defines before calling a scenario):
#   sc_ctl NODE ARGS...     `ulnetctl --node <NODE's socket> ARGS...`
#   sc_sst NODE ARGS...     `ulnet-selftest --node <NODE's socket> ARGS...`
#   sc_nid NODE             NODE's NID on the net under test
#   sc_case STATUS WHAT DETAIL
#                           one result: STATUS ok or FAIL, WHAT names the case ("o2ib brw write
#                           size=4097 offset=1"), DETAIL starts with "bytes=N errors=N"
#   sc_brw_note NODE TO SIZE (optional) extra words for a brw case line (the VM lane's RDMA plan);
#                           a non-zero status fails the case
#   sc_mark A B             (optional) per-case counters start afresh here (the VM lane's plans)
#   sc_kill NODE            (sc_peer_killed) make NODE vanish at once, no goodbye (SIGKILL of the
#                           daemon, or of the VM); may return before it is gone
#   sc_restart NODE         (sc_peer_killed) bring NODE back on its NID (a new incarnation); may
#                           return before it serves
#   sc_log NODE             (sc_peer_killed) the path of NODE's daemon log
#   SC_TMP                  a scratch directory; SC_NET names the net in case lines
# Every scenario reports each of its cases exactly once through sc_case (sc_o2ib_count says how many
# sc_o2ib reports), so a runner that counts lines sees a missing one.

SC_BRW_COUNT=4

# sc__json FILE KEY: the scalar value of "KEY": in FILE's JSON, any layout (the last one: the results
# read here hold each key once)
sc__json() { tr -d ' \n' <"$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,}\"]*\).*/\1/p" | head -1; }
sc__errs() # sc__errs FILE: every error counter of a selftest result, summed
{
	local e v n=0
	for e in timeout mismatch refused peer_gone unclassified; do
		v=$(sc__json "$1" "$e")
		n=$((n + ${v:-0}))
	done
	echo $n
}
command -v sc_brw_note >/dev/null 2>&1 || sc_brw_note() { :; }
command -v sc_mark >/dev/null 2>&1 || sc_mark() { :; }

# sc_ping A B: 3 LNet pings from A to B; each reply must list B's NID among the peer's NIDs.
sc_ping()
{
	local a="$1" b="$2" out="$SC_TMP/sc_ping.json" n r nid
	nid=$(sc_nid "$b")
	if ! sc_ctl "$a" ping "$nid" --count 3 --timeout_ms 5000 --json >"$out" 2>"$out.err"; then
		sc_case FAIL "$SC_NET ping" "bytes=0 errors=1 $(head -c 300 "$out.err")"
		return
	fi
	r=$(tr -d ' \n' <"$out" | grep -o '"time(ms)":' | wc -l)
	n=$(tr -d ' \n' <"$out" | grep -o "\"nid\":\"$nid\"" | wc -l)
	if [ "$r" = 3 ] && [ "$n" = 3 ]; then
		sc_case ok "$SC_NET ping" "bytes=0 errors=0 replies=3 from $nid"
	else
		sc_case FAIL "$SC_NET ping" "bytes=0 errors=1 replies=$r, naming $nid: $n: $(head -c 300 "$out")"
	fi
}

# sc_brw A B read|write SIZE OFFSET: SC_BRW_COUNT RPCs of SIZE bytes at OFFSET with check=full,
# 2 in flight: all RPCs, all bytes, zero errors of any class.
sc_brw()
{
	local a="$1" b="$2" op="$3" size="$4" off="$5" out="$SC_TMP/sc_brw.json" st=0 bytes rpcs errs note nst=0
	sc_sst "$a" --json brw "$op" --from "$(sc_nid "$a")" --to "$(sc_nid "$b")" --size "$size" --offset "$off" \
		--check full --concurrency 2 --count $SC_BRW_COUNT --timeout 30 >"$out" 2>"$out.err" || st=$?
	bytes=$(sc__json "$out" bytes)
	rpcs=$(sc__json "$out" rpcs)
	errs=$(sc__errs "$out")
	note=$(sc_brw_note "$a" "$b" "$size") || nst=1
	if [ $st = 0 ] && [ $nst = 0 ] && [ "$(sc__json "$out" ok)" = true ] && [ "$rpcs" = $SC_BRW_COUNT ] &&
		[ "$bytes" = $((SC_BRW_COUNT * size)) ] && [ "$errs" = 0 ]; then
		sc_case ok "$SC_NET brw $op size=$size offset=$off" "bytes=$bytes errors=0${note:+ $note}"
	else
		sc_case FAIL "$SC_NET brw $op size=$size offset=$off" "bytes=${bytes:-0} errors=${errs:-?} status=$st rpcs=${rpcs:-?} $note $(head -c 300 "$out") $(head -c 200 "$out.err")"
	fi
}

# the brw matrix of issue 10: offsets 0, 1, 4097 and 65537 (page-aligned, odd, one past a 4 KiB
# page, one past a 64 KiB page) of sizes 1, 4097, 65536, 1 MiB - offset and 1 MiB, where
# offset + size <= 1 MiB; each size:offset pair once
SC_OFFSETS="0 1 4097 65537"
sc_brw_pairs()
{
	local off size seen
	for off in $SC_OFFSETS; do
		seen=
		for size in 1 4097 65536 $((1048576 - off)) 1048576; do
			[ $((off + size)) -le 1048576 ] || continue
			case " $seen " in *" $size "*) continue ;; esac
			seen="$seen $size"
			echo "$size:$off"
		done
	done
}

# sc_brw_matrix A B: write and read for every pair of sc_brw_pairs
sc_brw_matrix()
{
	local so op
	for so in $(sc_brw_pairs); do
		for op in write read; do
			sc_brw "$1" "$2" $op "${so%%:*}" "${so##*:}"
		done
	done
}

# sc_brw_stream A B SECONDS: 1 MiB writes at offset 4097, 8 in flight, for SECONDS, check=full:
# data moved and zero errors
sc_brw_stream()
{
	local a="$1" b="$2" secs="$3" out="$SC_TMP/sc_stream.json" st=0 bytes errs mbps
	sc_sst "$a" --json brw write --from "$(sc_nid "$a")" --to "$(sc_nid "$b")" --size 1048576 --offset 4097 \
		--concurrency 8 --duration "$secs" --check full --timeout 30 >"$out" 2>"$out.err" || st=$?
	bytes=$(sc__json "$out" bytes)
	mbps=$(sc__json "$out" MBps)
	errs=$(sc__errs "$out")
	if [ $st = 0 ] && [ "${bytes:-0}" -gt 0 ] && [ "$errs" = 0 ]; then
		sc_case ok "$SC_NET brw write 1 MiB x 8 in flight for ${secs} s" "bytes=$bytes errors=0 $mbps MB/s"
	else
		sc_case FAIL "$SC_NET brw write 1 MiB x 8 in flight for ${secs} s" "bytes=${bytes:-0} errors=${errs:-?} status=$st $(head -c 300 "$out") $(head -c 200 "$out.err")"
	fi
}

# sc_rdma_counters A B: A's `peer show -v` for B has the o2ib RDMA counters of the 1 MiB bucket
# (after sc_brw_matrix: transfers, at least one WR per transfer and one SGE per WR) and no post
# rejects
sc_rdma_counters()
{
	local a="$1" b="$2" out="$SC_TMP/sc_peer.json" got
	if ! sc_ctl "$a" peer show -v --nid "$(sc_nid "$b")" --json >"$out" 2>"$out.err"; then
		sc_case FAIL "$SC_NET peer show -v RDMA counters" "bytes=0 errors=1 $(head -c 300 "$out.err")"
		return
	fi
	# "post_rejects R ... transfers T wrs_per_transfer W sges_per_wr S" of the 1048576 bucket
	got=$(tr -d ' \n' <"$out" | awk '
		function get(s, f) { if (match(s, "\"" f "\":[0-9.]+")) return substr(s, RSTART + length(f) + 3, RLENGTH - length(f) - 3); return "" }
		{
			pr = get($0, "post_rejects")
			n = split($0, part, "\"max_bytes\":")
			for (i = 2; i <= n; i++)
				if (index(part[i], "1048576,") == 1)
					print pr, get(part[i], "transfers"), get(part[i], "wrs_per_transfer"), get(part[i], "sges_per_wr")
		}')
	if echo "$got" | awk 'NF == 4 && $1 == 0 && $2 > 0 && $3 >= 1 && $4 >= 1 {ok = 1} END {exit !ok}'; then
		# shellcheck disable=SC2086 # the four numbers, split on purpose
		set -- $got
		sc_case ok "$SC_NET peer show -v RDMA counters" "bytes=0 errors=0 1 MiB bucket: $2 transfers, $3 WRs per transfer, $4 SGEs per WR; post_rejects 0"
	else
		sc_case FAIL "$SC_NET peer show -v RDMA counters" "bytes=0 errors=1 post_rejects/transfers/wrs_per_transfer/sges_per_wr: '$got' $(head -c 300 "$out")"
	fi
}

# sc_sst_ping A B: 50 selftest ping RPCs, all answered
sc_sst_ping()
{
	local a="$1" b="$2" out="$SC_TMP/sc_sping.json" st=0 rpcs errs
	sc_sst "$a" --json ping --from "$(sc_nid "$a")" --to "$(sc_nid "$b")" --count 50 >"$out" 2>"$out.err" || st=$?
	rpcs=$(sc__json "$out" rpcs)
	errs=$(sc__errs "$out")
	if [ $st = 0 ] && [ "$rpcs" = 50 ] && [ "$errs" = 0 ]; then
		sc_case ok "$SC_NET selftest ping x50" "bytes=0 errors=0 rpcs=50"
	else
		sc_case FAIL "$SC_NET selftest ping x50" "bytes=0 errors=${errs:-?} status=$st rpcs=${rpcs:-?} $(head -c 300 "$out") $(head -c 200 "$out.err")"
	fi
}

# sc_o2ib A B: the o2ib scenario from A towards B (the runner runs it both ways): ping, the brw
# matrix, 1 s of 1 MiB writes 8 in flight, the RDMA counters, selftest ping. sc_o2ib_count: its
# number of cases.
sc_o2ib()
{
	sc_ping "$1" "$2"
	sc_mark "$1" "$2"
	sc_brw_matrix "$1" "$2"
	sc_brw_stream "$1" "$2" 1
	sc_rdma_counters "$1" "$2"
	sc_sst_ping "$1" "$2"
}
sc_o2ib_count() { echo $((1 + 2 * $(sc_brw_pairs | wc -l) + 3)); }

# sc__state A B: B's state in A's `peer show` (up, down; nothing when A has no such peer)
sc__state() { sc_ctl "$1" peer show --nid "$(sc_nid "$2")" --json 2>/dev/null | tr -d ' \n' | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p'; }
# sc__sent A: A's send_length counter (bytes it sent)
sc__sent() { sc_ctl "$1" stats show --json | tr -d ' \n' | sed -n 's/.*"send_length":\([0-9]*\).*/\1/p'; }

# sc_peer_killed A B TIMEOUT SECONDS: B dies mid-transfer. A writes 1 MiB RPCs to B (check=full,
# 2 in flight, for SECONDS, RPC timeout TIMEOUT: the NIs' o2ib timeout); once data flows B is
# killed (sc_kill). Cases (sc_peer_killed_count):
#  - peer down: A's `peer show` says B is down within TIMEOUT + SC_DOWN_GRACE s (the LND tick, this
#    loop's polling, a message posted just after the kill, or a keepalive NOOP when nothing was
#    posted to B: the caller sets keepalive well under TIMEOUT where a kill says no goodbye) and stays down; watched on its own
#    deadline whatever the brw does (the close that marks B down is also what ends the brw); the
#    line quotes A's log line of the close;
#  - the brw fails with classified errors only (peer gone or timeout; no mismatch, nothing
#    unclassified) within SECONDS + 2 TIMEOUT of the kill (RPCs sent after the kill time out too);
#  - B is brought back (sc_restart): A's ping is answered within 120 s, peer show says up;
#  - 1 MiB at offset 4097 written to B again.
SC_DOWN_GRACE=5
sc_peer_killed_count() { echo 4; }
sc_peer_killed()
{
	local a="$1" b="$2" tmo="$3" secs="$4" out="$SC_TMP/sc_kill.json" pid sent i t0 now t1 down flap
	local log nl why st gone to un mm rf bytes limit=$(($4 + 2 * $3))
	rm -f "$SC_TMP/sc_kill.end"
	{
		st=0
		sc_sst "$a" --json brw write --from "$(sc_nid "$a")" --to "$(sc_nid "$b")" --size 1048576 \
			--check full --concurrency 2 --duration "$secs" --timeout "$tmo" >"$out" 2>"$out.err" || st=$?
		echo "$st $(date +%s)" >"$SC_TMP/sc_kill.end"
	} &
	pid=$!
	# data flows: A sent 2 MiB more (30 s at most)
	sent=$(sc__sent "$a")
	i=0
	while [ "$(sc__sent "$a")" -le $((${sent:-0} + 2097152)) ] && [ $i -lt 300 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	log=$(sc_log "$a")
	nl=$(wc -l <"$log")
	t0=$(date +%s)
	sc_kill "$b"
	# until the brw ended and B showed down, or 60 s; once down, B must stay down
	t1='' down='' flap=''
	while [ -z "$t1" ] || [ -z "$down" ]; do
		now=$(($(date +%s) - t0))
		[ $now -le 60 ] || break
		case "$(sc__state "$a" "$b")" in
		down) [ -n "$down" ] || down=$now ;;
		*) [ -z "$down" ] || flap="up again $now s after the kill" ;;
		esac
		[ ! -s "$SC_TMP/sc_kill.end" ] || t1=$(cut -d' ' -f2 "$SC_TMP/sc_kill.end")
		sleep 0.5
	done
	if [ -n "$down" ] && [ -z "$flap" ] && [ "$(sc__state "$a" "$b")" != down ]; then
		flap="$(sc__state "$a" "$b") at the end"
	fi
	why=$(sed -n "$((nl + 1)),\$p" "$log" | grep -m1 'closing the connection\|no connection within\|down (' | sed 's/^.*O2IB: //' | head -c 200)
	if [ -n "$down" ] && [ "$down" -le $((tmo + SC_DOWN_GRACE)) ] && [ -z "$flap" ]; then
		sc_case ok "$SC_NET peer down after the kill" "bytes=0 errors=0 peer show: down $down s after it (limit $tmo + $SC_DOWN_GRACE s), still down at the end; log: ${why:-nothing}"
	else
		sc_case FAIL "$SC_NET peer down after the kill" "bytes=0 errors=1 peer show: ${down:+down after $down s}${down:-never down within 60 s} (limit $tmo + $SC_DOWN_GRACE s) $flap; log: ${why:-nothing}"
	fi
	wait $pid
	st=$(cut -d' ' -f1 "$SC_TMP/sc_kill.end" 2>/dev/null || echo 1)
	[ -n "$t1" ] || t1=$(date +%s)
	gone=$(sc__json "$out" peer_gone)
	to=$(sc__json "$out" timeout)
	un=$(sc__json "$out" unclassified)
	mm=$(sc__json "$out" mismatch)
	rf=$(sc__json "$out" refused)
	bytes=$(sc__json "$out" bytes)
	if [ "$st" != 0 ] && [ $((${gone:-0} + ${to:-0})) -gt 0 ] && [ "${un:-0}" = 0 ] && [ "${mm:-0}" = 0 ] &&
		[ $((t1 - t0)) -le "$limit" ]; then
		sc_case ok "$SC_NET peer killed mid-transfer" "bytes=${bytes:-0} errors=0 classified: peer_gone ${gone:-0} timeout ${to:-0} refused ${rf:-0}, failed $((t1 - t0)) s after the kill (limit $limit s)"
	else
		sc_case FAIL "$SC_NET peer killed mid-transfer" "bytes=${bytes:-0} errors=1 status=$st peer_gone ${gone:-0} timeout ${to:-0} refused ${rf:-0} mismatch ${mm:-0} unclassified ${un:-0} after $((t1 - t0)) s (limit $limit s): $(head -c 300 "$out" "$out.err")"
	fi
	sc_restart "$b"
	i=0
	until sc_ctl "$a" ping "$(sc_nid "$b")" --count 1 --timeout_ms 1000 >/dev/null 2>&1 || [ $i -ge 120 ]; do
		i=$((i + 1))
		sleep 1
	done
	if [ $i -ge 120 ]; then
		sc_case FAIL "$SC_NET peer back" "bytes=0 errors=1 no ping answer within 120 s"
	elif [ "$(sc__state "$a" "$b")" = up ]; then
		sc_case ok "$SC_NET peer back" "bytes=0 errors=0 ping answered, peer show: up"
	else
		sc_case FAIL "$SC_NET peer back" "bytes=0 errors=1 ping answered, peer show: $(sc__state "$a" "$b")"
	fi
	sc_mark "$a" "$b"
	sc_brw "$a" "$b" write 1048576 4097
}
