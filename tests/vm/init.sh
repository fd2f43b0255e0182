#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of both VM lane guests (busybox sh; tests/vm/run builds the initramfs). Loads the modules in
# /etc/vmlane/modules (dependency order, written by the host), brings up eth0 and Soft-RoCE rxe0,
# starts ulnetd, waits for the peer VM, runs the cases of tests/vm/cases.sh from this node to the
# peer and prints one "VMLANE CASE" line each on the console (the host reads the serial log).
# Parameters come from the kernel command line: vmlane.name, vmlane.ip, vmlane.peer,
# vmlane.peername, vmlane.ip1 and vmlane.peer1 (second subnet, for o2ib1), vmlane.nets (the NIs:
# tcp, o2ib, o2ib1), vmlane.cases, vmlane.verbs_tests (test_verbs_ops's test count), vmlane.first
# (1: this node runs its cases first). With the routed group the first node is also a router (a tcp1
# NI on loopback, routing enabled) with a tcp1-only node behind it, and the other node has a route
# to tcp1 through the first node's o2ib NID.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
export PATH=/usr/bin:/bin:/usr/sbin:/sbin

say() { echo "VMLANE $*"; }
die()
{
	say "ERROR $*"
	[ -f /tmp/ulnetd.log ] && sed 's/^/VMLANE LOG ulnetd: /' /tmp/ulnetd.log | tail -40
	dmesg | tail -20 | sed 's/^/VMLANE LOG dmesg: /'
	say "DONE"
	poweroff -f
}
param() { tr ' ' '\n' </proc/cmdline | sed -n "s/^vmlane\.$1=//p" | tail -1; }

NAME=$(param name)
ME=$(param ip)
PEER=$(param peer)
PEERNAME=$(param peername)
ME1=$(param ip1)
PEER1=$(param peer1)
NETS=$(param nets)
CASES=$(param cases)
VERBS_TESTS=$(param verbs_tests)
FIRST=$(param first)
ROUTED=
case ",$CASES," in *,routed,*) ROUTED=1 ;; esac
say "BOOT $NAME kernel $(uname -r) $(uname -m)"

kver=$(uname -r)
while read -r m; do
	insmod "/lib/modules/$kver/$m" || die "insmod $m failed"
done </etc/vmlane/modules

ip link set lo up
ip link set eth0 mtu 9000 up || die "no eth0"
ip addr add "$ME/24" dev eth0 || die "ip addr add $ME"
ip addr add "$ME1/24" dev eth0 || die "ip addr add $ME1"
rdma link add rxe0 type rxe netdev eth0 || die "rdma link add rxe0 (is crc32_generic loaded?)"
# registered memory is pinned: no memlock limit inside the VM
ulimit -l unlimited

{
	echo "net:"
	for net in $(echo "$NETS" | tr ',' ' '); do
		echo "    - net type: $net"
		echo "      local NI(s):"
		case $net in
		tcp)
			echo "        - nid: $ME@tcp"
			echo "          interfaces: {0: eth0}"
			;;
		o2ib)
			# keepalive 2: the kill case's peer VM dies with no goodbye; when this node has nothing
			# posted to it then (it waits for the peer's next GET_REQ), only a keepalive NOOP that
			# fails finds it, as with kernel o2iblnd (whose keepalive is 100 s): 2 s + the send's
			# timeout stays within the case's limit of timeout + 5 s
			echo "        - nid: $ME@o2ib"
			echo "          lnd tunables:"
			echo "              provider: verbs"
			echo "              timeout: 20"
			echo "              keepalive: 2"
			;;
		o2ib1)
			# LU-5718's limits: 16 RDMA fragments, one SGE per work request
			echo "        - nid: $ME1@o2ib1"
			echo "          lnd tunables:"
			echo "              provider: verbs"
			echo "              timeout: 20"
			echo "              max_frags: 16"
			echo "              device: {max_send_sge: 1}"
			;;
		esac
	done
	# the routed group (cases.sh): the first node routes between o2ib and tcp1, a loopback net
	# inside this guest whose other node (127.0.0.2@tcp1, started below) has no other NI
	if [ -n "$ROUTED" ] && [ "$FIRST" = 1 ]; then
		echo "    - net type: tcp1"
		echo "      local NI(s):"
		echo "        - nid: 127.0.0.1@tcp1"
		echo "routing:"
		echo "    enable: 1"
	elif [ -n "$ROUTED" ]; then
		# the router may boot after this node: a gateway that did not answer is checked again
		# within 5 s, not lnetctl's default 60
		echo "route:"
		echo "    - net: tcp1"
		echo "      gateway: $PEER@o2ib"
		echo "routing:"
		echo "    alive_router_check_interval: 5"
		echo "    router_ping_timeout: 5"
	fi
} >/etc/ulnet.yaml
# start_ulnetd CONFIG SOCKET LOG: one ulnetd, ready to serve (its control socket answers)
start_ulnetd()
{
	ulnetd -c "$1" --control "$2" >"$3" 2>&1 &
	i=0
	until ulnetctl --node "$2" net show >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || die "ulnetd -c $1 not ready after 30 s"
		kill -0 $! 2>/dev/null || die "ulnetd -c $1 exited during startup: $(tail -3 "$3")"
		sleep 0.1
	done
}
# no page_size in the configuration: the node takes it from its kernel (sysconf)
start_ulnetd /etc/ulnet.yaml /run/ulnet.sock /tmp/ulnetd.log
if [ -n "$ROUTED" ] && [ "$FIRST" = 1 ]; then
	# the tcp1-only node behind the router (its gateway is up already: lnetctl's default checker)
	cat >/etc/ulnet-tcp1.yaml <<EOF
net:
    - net type: tcp1
      local NI(s):
        - nid: 127.0.0.2@tcp1
route:
    - net: o2ib
      gateway: 127.0.0.1@tcp1
EOF
	start_ulnetd /etc/ulnet-tcp1.yaml /run/ulnet-tcp1.sock /tmp/ulnetd-tcp1.log
fi
PS=$(ulnetctl --node /run/ulnet.sock export | sed -n 's/^ *page_size: *//p')
say "READY $NAME $ME page_size $PS rxe0 $(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)"

. /etc/vmlane/cases.sh
vm_cases "$CASES"
say "DONE"
# the host stops both VMs once both have printed DONE (the peer may still be running its cases
# against this node); a stray guest ends itself after 10 minutes
sleep 600
poweroff -f
