#!/usr/bin/env bash
# Install what ulnet needs to build and test on Debian 12 (run as root). Idempotent.
set -euo pipefail
pkgs=(meson ninja-build gcc clang pkg-config libyaml-dev libcmocka-dev python3 iproute2 tshark iperf3
      libclang-rt-14-dev qemu-user-static gcc-powerpc64-linux-gnu libc6-dev-ppc64-cross
      libibverbs-dev librdmacm-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections || true
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
