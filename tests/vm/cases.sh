# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# The VM lane's cases, run inside each guest (busybox sh) from this node ($NAME, $ME) to the peer
# ($PEERNAME, $PEER); sourced by tests/vm/init.sh. Every case prints exactly one line:
#   VMLANE CASE <from>-><to> <net> <what> ok|FAIL bytes=<n> errors=<n> [detail]
# and the host (tests/vm/run) counts them. "VMLANE PLAN <n>" first says how many will follow, so a
# guest that dies midway shows as missing cases, not as fewer passes.

SOCK=/run/ulnet.sock
BRW_COUNT=4

# one case line; status ok|FAIL
vm_case() { echo "VMLANE CASE $NAME->$PEERNAME $*"; }

# vm_json FILE KEY: the scalar value of "KEY": in a flat JSON line
vm_json() { sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" "$1" | head -1; }

# wait (up to 120 s: the other VM may boot slower) until the peer answers a ping on NET
vm_wait_peer()
{
	local net=$1 i=0
	until ulnetctl --node $SOCK ping "$PEER@$net" --count 1 --timeout 1000 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 120 ] || return 1
		sleep 1
	done
}

# vm_ping NET: 3 pings, each reply must name the peer's NID
vm_ping()
{
	local net=$1 out=/tmp/ping.json n
	if ulnetctl --node $SOCK ping "$PEER@$net" --count 3 --timeout 5000 --json >$out 2>/tmp/ping.err; then
		n=$(grep -o "\"primary nid\": *\"$PEER@$net\"" $out | wc -l)
		if [ "$n" = 3 ]; then
			vm_case "$net ping ok bytes=0 errors=0 replies=3"
			return
		fi
		vm_case "$net ping FAIL bytes=0 errors=1 replies=$n: $(head -c 300 $out)"
		return
	fi
	vm_case "$net ping FAIL bytes=0 errors=1 $(head -c 300 /tmp/ping.err)"
}

# vm_brw NET read|write SIZE OFFSET: BRW_COUNT RPCs with check=full; all bytes, zero errors
vm_brw()
{
	local net=$1 op=$2 size=$3 off=$4 out=/tmp/brw.json st=0 bytes errs e v what
	ulnet-selftest --node $SOCK --json brw "$op" --from "$ME@$net" --to "$PEER@$net" --size "$size" \
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

vm_cases_tcp_count() { echo $((1 + 2 * $(echo $TCP_BRW | wc -w))); }

vm_cases_tcp()
{
	vm_ping tcp
	local so op
	for so in $TCP_BRW; do
		for op in write read; do
			vm_brw tcp $op "${so%%:*}" "${so##*:}"
		done
	done
}

# vm_cases LIST: comma-separated groups (tcp)
vm_cases()
{
	local groups total=0 g
	groups=$(echo "$1" | tr ',' ' ')
	for g in $groups; do
		total=$((total + $(vm_cases_${g}_count)))
	done
	echo "VMLANE PLAN $total"
	for g in $groups; do
		if ! vm_wait_peer "$g"; then
			echo "VMLANE ERROR $NAME: $PEERNAME@$g does not answer ping after 120 s"
			continue
		fi
		vm_cases_$g
	done
}
