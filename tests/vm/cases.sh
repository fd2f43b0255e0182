# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# The VM lane's cases, run inside each guest (busybox sh) from this node ($NAME, $ME) to the peer
# ($PEERNAME, $PEER; $ME1 and $PEER1 on o2ib1); sourced by tests/vm/init.sh. Every case prints exactly one line:
#   VMLANE CASE <from>-><to> <net> <what> ok|FAIL bytes=<n> errors=<n> [detail]
# and the host (tests/vm/run) counts them. "VMLANE PLAN <n>" first says how many will follow, so a
# guest that dies midway shows as missing cases, not as fewer passes.

SOCK=/run/ulnet.sock
BRW_COUNT=4

# vm_me NET / vm_peer NET: this node's and the peer's address on NET (o2ib1 has its own subnet)
vm_me() { if [ "$1" = o2ib1 ]; then echo "$ME1"; else echo "$ME"; fi; }
vm_peer() { if [ "$1" = o2ib1 ]; then echo "$PEER1"; else echo "$PEER"; fi; }

# one case line; status ok|FAIL
vm_case() { echo "VMLANE CASE $NAME->$PEERNAME $*"; }

# vm_json FILE KEY: the scalar value of "KEY": in a flat JSON line
vm_json() { sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" "$1" | head -1; }

# wait (up to 120 s: the other VM may boot slower) until the peer answers a ping on NET
vm_wait_peer()
{
	local net=$1 i=0
	until ulnetctl --node $SOCK ping "$(vm_peer $net)@$net" --count 1 --timeout 1000 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 120 ] || return 1
		sleep 1
	done
}

# vm_ping NET: 3 pings, each reply must list the peer's NID on NET
vm_ping()
{
	local net=$1 out=/tmp/ping.json n r peer
	peer=$(vm_peer $net)@$net
	if ulnetctl --node $SOCK ping "$peer" --count 3 --timeout 5000 --json >$out 2>/tmp/ping.err; then
		r=$(grep -o '"time (ms)":' $out | wc -l)
		n=$(grep -o "\"nid\":\"$peer\"" $out | wc -l)
		if [ "$r" = 3 ] && [ "$n" = 3 ]; then
			vm_case "$net ping ok bytes=0 errors=0 replies=3"
			return
		fi
		vm_case "$net ping FAIL bytes=0 errors=1 replies=$r naming $peer: $n: $(head -c 300 $out)"
		return
	fi
	vm_case "$net ping FAIL bytes=0 errors=1 $(head -c 300 /tmp/ping.err)"
}

# vm_brw NET read|write SIZE OFFSET: BRW_COUNT RPCs with check=full; all bytes, zero errors
vm_brw()
{
	local net=$1 op=$2 size=$3 off=$4 out=/tmp/brw.json st=0 bytes errs e v what
	ulnet-selftest --node $SOCK --json brw "$op" --from "$(vm_me $net)@$net" --to "$(vm_peer $net)@$net" --size "$size" \
		--offset "$off" --check full --concurrency 2 --count $BRW_COUNT --timeout 30 >$out 2>/tmp/brw.err || st=$?
	bytes=$(vm_json $out bytes)
	errs=0
	for e in timeout mismatch refused peer_gone unclassified; do
		v=$(vm_json $out $e)
		errs=$((errs + ${v:-0}))
	done
	what="brw $op size=$size offset=$off"
	if [ $st = 0 ] && [ "$(vm_json $out ok)" = true ] && [ "$bytes" = $((BRW_COUNT * size)) ] && [ $errs = 0 ]; then
		vm_case "$net $what ok bytes=$bytes errors=0"
	else
		vm_case "$net $what FAIL bytes=${bytes:-0} errors=$errs status=$st $(vm_json $out first_error) $(head -c 200 /tmp/brw.err)"
	fi
}

# the tcp set: ping, then brw write and read at a page-straddling offset and an odd one
TCP_BRW="1048576:0 4097:1 1044479:4097"

vm_cases_tcp_net() { echo tcp; }
vm_cases_tcp_count() { echo $((1 + 2 * $(echo $TCP_BRW | wc -w))); }
vm_cases_tcp()
{
	local so op
	vm_ping tcp
	for so in $TCP_BRW; do
		for op in write read; do
			vm_brw tcp $op "${so%%:*}" "${so##*:}"
		done
	done
}

# the o2ib set (issue 10): ping, then brw write and read at offsets 0, 1, 4097, 65537 of sizes 1,
# 4097, 65536, 1 MiB - offset and 1 MiB, where offset + size <= 1 MiB (each pair once)
O2IB_OFFSETS="0 1 4097 65537"
vm_o2ib_pairs()
{
	local off size seen
	for off in $O2IB_OFFSETS; do
		seen=
		for size in 1 4097 65536 $((1048576 - off)) 1048576; do
			[ $((off + size)) -le 1048576 ] || continue
			case " $seen " in *" $size "*) continue ;; esac
			seen="$seen $size"
			echo "$size:$off"
		done
	done
}
vm_cases_o2ib_net() { echo o2ib; }
vm_cases_o2ib_count() { echo $((1 + 2 * $(vm_o2ib_pairs | wc -l))); }
vm_cases_o2ib()
{
	local so op
	vm_ping o2ib
	for so in $(vm_o2ib_pairs); do
		for op in write read; do
			vm_brw o2ib $op "${so%%:*}" "${so##*:}"
		done
	done
}

# LU-5718's shape on its own net (o2ib1, NIs limited to 16 RDMA fragments and max_send_sge 1):
# 1 MiB at an odd offset, both ways of the data
vm_cases_lu5718_net() { echo o2ib1; }
vm_cases_lu5718_count() { echo 3; }
vm_cases_lu5718()
{
	vm_ping o2ib1
	vm_brw o2ib1 write 1048576 7
	vm_brw o2ib1 read 1048576 7
}

# vm_cases LIST: comma-separated groups (tcp, o2ib, lu5718)
vm_cases()
{
	local groups total=0 g net
	groups=$(echo "$1" | tr ',' ' ')
	for g in $groups; do
		total=$((total + $(vm_cases_${g}_count)))
	done
	echo "VMLANE PLAN $total"
	for g in $groups; do
		net=$(vm_cases_${g}_net)
		if ! vm_wait_peer "$net"; then
			echo "VMLANE ERROR $NAME: $PEERNAME@$net does not answer ping after 120 s"
			continue
		fi
		vm_cases_$g
	done
}
