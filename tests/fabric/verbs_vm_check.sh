#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run test_verbs_ops (the verbs provider on a real device) inside one VM of the VM lane with
# Soft-RoCE: `tests/fabric/verbs_vm_check.sh amd64|ppc64el`. Reuses what tests/vm/run left in
# $VM_DIR (default build-vm: kernels, unpacked roots, staged images); without them exits 77. Builds
# the test natively (amd64) or cross (ppc64el, fetching libcmocka for it into the lane's sysroot),
# boots one VM (user-mode network: the device connects to itself), and exits 0 when every test passed.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
VM_DIR=${VM_DIR:-$SRC/build-vm}
ARCH=${1:-amd64}
declare -A TRIPLET=([amd64]=x86_64-linux-gnu [ppc64el]=powerpc64le-linux-gnu)
[[ -n ${TRIPLET[$ARCH]:-} ]] || { echo "usage: $0 amd64|ppc64el" >&2; exit 2; }
T=${TRIPLET[$ARCH]} ROOT=$VM_DIR/root-$ARCH
[[ -d $VM_DIR/stage-$ARCH ]] || { echo "skip: no $VM_DIR/stage-$ARCH (run tests/vm/run first)"; exit 77; }

B=$SRC/build-verbs-$ARCH
if [[ $ARCH == ppc64el && ! -f $ROOT/usr/lib/$T/pkgconfig/cmocka.pc ]]; then
	(cd "$VM_DIR/debs/ppc64el" && apt-get download libcmocka0:ppc64el libcmocka-dev:ppc64el >/dev/null 2>&1)
	for d in "$VM_DIR"/debs/ppc64el/libcmocka*.deb; do dpkg-deb -x "$d" "$ROOT"; done
fi
cross=()
[[ $ARCH == amd64 ]] || cross=(--cross-file "$VM_DIR/cross-ppc64le.ini")
[[ -f $B/build.ninja ]] || meson setup "$B" "$SRC" "${cross[@]}" -Dtests=true -Dfabric_verbs=enabled >"$VM_DIR/verbs-check-$ARCH.setup.log" 2>&1 ||
	{ tail -20 "$VM_DIR/verbs-check-$ARCH.setup.log"; exit 1; }
nice -n 10 ninja -C "$B" tests/fabric/test_verbs_ops >/dev/null

STAGE=$VM_DIR/verbs-check-$ARCH
rm -rf "$STAGE"
cp -a "$VM_DIR/stage-$ARCH" "$STAGE"
cp "$B/tests/fabric/test_verbs_ops" "$STAGE/usr/bin/"
lib=$( [[ $ARCH == amd64 ]] && echo /usr/lib/$T/libcmocka.so.0 || echo "$ROOT/usr/lib/$T/libcmocka.so.0")
mkdir -p "$STAGE/usr/lib/$T"
cp -L "$lib" "$STAGE/usr/lib/$T/"
cat >"$STAGE/init" <<'INIT'
#!/bin/sh
/bin/busybox --install -s
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
while read -r m; do insmod "/lib/modules/$(uname -r)/$m"; done </etc/vmlane/modules
ip link set eth0 mtu 9000 up; ip addr add 192.168.77.1/24 dev eth0
rdma link add rxe0 type rxe netdev eth0
ULNET_VERBS_ADDR=192.168.77.1 test_verbs_ops 2>&1 | sed 's/^/VCHECK /'
echo "VCHECK END"
poweroff -f
INIT
chmod 755 "$STAGE/init"
(cd "$STAGE" && find . | LC_ALL=C sort | busybox cpio -o -H newc -R 0:0 2>/dev/null) >"$STAGE.cpio"
KIMG=$(ls "$VM_DIR/kernel-$ARCH/boot/"vmlinu[xz]-* | head -1)
net=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0)
if [[ $ARCH == amd64 ]]; then
	nice -n 10 timeout 300 qemu-system-x86_64 -m 256 -display none -monitor none -nodefaults \
		-serial "file:$STAGE.log" -no-reboot -kernel "$KIMG" -initrd "$STAGE.cpio" \
		-append "console=ttyS0 quiet panic=-1" "${net[@]}" >"$STAGE.qemu.log" 2>&1 || true
else
	nice -n 10 timeout 400 qemu-system-ppc64 \
		-M pseries,x-vof=on,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off -cpu POWER9 \
		-m 512 -display none -monitor none -nodefaults -serial "file:$STAGE.log" -no-reboot -kernel "$KIMG" \
		-initrd "$STAGE.cpio" -append "console=hvc0 quiet panic=-1" "${net[@]}" >"$STAGE.qemu.log" 2>&1 || true
fi
tr -d '\r' <"$STAGE.log" | sed -n 's/^VCHECK //p'
tr -d '\r' <"$STAGE.log" | grep -q '^VCHECK \[  PASSED  \] 3 test(s)' && ! grep -q '^VCHECK \[  FAILED' "$STAGE.log"
