#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of both VM lane guests (busybox sh; tests/vm/run builds the initramfs). Loads the modules in
# /etc/vmlane/modules (dependency order, written by the host), brings up eth0 and Soft-RoCE rxe0,
# starts ulnetd, waits for the peer VM, runs the cases of tests/vm/cases.sh from this node to the
# peer and prints one "VMLANE CASE" line each on the console (the host reads the serial log).
# Parameters come from the kernel command line: vmlane.name, vmlane.ip, vmlane.peer,
# vmlane.peername, vmlane.ip1 and vmlane.peer1 (second subnet, for o2ib1), vmlane.nets (the NIs:
# tcp, o2ib, o2ib1), vmlane.cases, vmlane.verbs_tests (test_verbs_ops's test count), vmlane.first
# (1: this node runs its cases first).
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
} >/etc/ulnet.yaml
# no page_size in the configuration: the node takes it from its kernel (sysconf)
ulnetd -c /etc/ulnet.yaml --control /run/ulnet.sock >/tmp/ulnetd.log 2>&1 &
i=0
until ulnetctl --node /run/ulnet.sock net show >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || die "ulnetd not ready after 30 s"
	kill -0 $! 2>/dev/null || die "ulnetd exited during startup"
	sleep 0.1
done
PS=$(ulnetctl --node /run/ulnet.sock export | sed -n 's/^ *page_size: *//p')
say "READY $NAME $ME page_size $PS rxe0 $(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)"

. /etc/vmlane/cases.sh
FIRST=$(param first)
vm_cases "$CASES"
say "DONE"
# the host stops both VMs once both have printed DONE (the peer may still be running its cases
# against this node); a stray guest ends itself after 10 minutes
sleep 600
poweroff -f
