# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC3043 # local: busybox ash, dash and bash all have it
# The o2ib scenarios (and the tcp lane's ping and brw), one implementation for every runner: the
# integration tests run them between two ulnetd on the shm provider on 127.x (bash, on the host:
# test_o2ib_ping.sh, test_o2ib_selftest_brw.sh) and the VM lane runs the same functions inside each
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
#   SC_TMP                  a scratch directory; SC_NET names the net in case lines
# Every scenario reports each of its cases exactly once through sc_case (sc_o2ib_count says how many
# sc_o2ib reports), so a runner that counts lines sees a missing one.

SC_BRW_COUNT=4

# sc__json FILE KEY: the first scalar value of "KEY": in FILE's JSON (any layout)
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

# sc_ping A B: 3 LNet pings from A to B; each reply must list B's NID among the peer's NIDs.
sc_ping()
{
	local a="$1" b="$2" out="$SC_TMP/sc_ping.json" n r nid
	nid=$(sc_nid "$b")
	if ! sc_ctl "$a" ping "$nid" --count 3 --timeout 5000 --json >"$out" 2>"$out.err"; then
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
	sc_brw_matrix "$1" "$2"
	sc_brw_stream "$1" "$2" 1
	sc_rdma_counters "$1" "$2"
	sc_sst_ping "$1" "$2"
}
sc_o2ib_count() { echo $((1 + 2 * $(sc_brw_pairs | wc -l) + 3)); }
