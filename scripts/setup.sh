#!/usr/bin/env bash
# Install what ulnet needs to build and test on Debian 12 (run as root). Idempotent.
set -euo pipefail
pkgs=(meson ninja-build gcc clang pkg-config libyaml-dev libcmocka-dev python3 iproute2 tshark iperf3
      libclang-rt-14-dev qemu-user-static gcc-powerpc64-linux-gnu libc6-dev-ppc64-cross
      libibverbs-dev librdmacm-dev
      # promtool (test_metrics_http checks the metrics endpoint's output with it)
      prometheus
      # the VM lane (tests/vm/run): the two system emulators, the ppc64le cross compiler (its libc
      # headers come with it), busybox-static (host cpio and depmod for the images; the guests'
      # busybox comes from the per-arch packages the lane downloads)
      qemu-system-x86 qemu-system-ppc gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross busybox-static
      # sd_notify for ulnetd@.service (libsystemd), the man pages (scdoc), and the package lane
      # (tests/pkg/run.sh, docs/packaging.md): the Debian build and its check, systemd-analyze, the
      # man page checks (groff, man, mandoc), bash completion, setpriv/unshare, procps
      libsystemd-dev scdoc debhelper dpkg-dev fakeroot lintian systemd groff-base man-db mandoc
      bash-completion util-linux procps
      # the package lane's stand-in for the unit's seccomp settings (tests/pkg/sandbox.py)
      python3-seccomp)
# The VM lane downloads ppc64el packages (kernel, rdma-core, libyaml) with apt-get download
if ! dpkg --print-foreign-architectures | grep -qx ppc64el; then
	dpkg --add-architecture ppc64el
	need_update=1
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) || [[ -n ${need_update:-} ]]; then
	export DEBIAN_FRONTEND=noninteractive
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections || true
	# a mirror mid-sync fails an index now and then ("File has unexpected size"): try again a few
	# times, then go on with what was fetched (a package really missing still fails the install)
	for try in 1 2 3 4 5; do
		apt-get update -qq && break
		echo "setup.sh: apt-get update failed (try $try of 5)" >&2
		sleep $((try * 10))
	done
	((${#missing[@]} == 0)) || apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
