# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Host-side helpers of the VM lane (tests/vm/run): Debian packages in, two initramfs images out.
# Everything lands under $VM_DIR (default build-vm/, gitignored); downloads are kept across runs.

vm_log() { printf '[vm %s] %s\n' "$(date +%T)" "$*" >&2; }
vm_die() { printf 'vm lane: FAIL: %s\n' "$*" >&2; exit 1; }

# Debian architecture -> GNU triplet, kernel flavour, qemu binary.
declare -gA VM_TRIPLET=([amd64]=x86_64-linux-gnu [ppc64el]=powerpc64le-linux-gnu)
declare -gA VM_FLAVOUR=([amd64]=amd64 [ppc64el]=powerpc64le)

# Guest user space (both arches): the shell, rdma-core's run-time part, iproute2 for `rdma link add`,
# perftest (ib_write_bw, the bench group's baseline), cmocka (the verbs group's test_verbs_ops) and
# the libraries they and ulnet need. Closure
# is checked later by following ELF NEEDED entries.
VM_RUNTIME_PKGS=(busybox-static libc6 libgcc-s1 libyaml-0-2 libibverbs1 ibverbs-providers librdmacm1
	libnl-3-200 libnl-route-3-200 ibverbs-utils rdmacm-utils iproute2 libmnl0 libbsd0 libmd0 libcap2
	perftest libibumad3 libpci3 libudev1 zlib1g libcmocka0)
# Headers and link-time .so names for the ppc64le cross build (unpacked into the same sysroot).
VM_DEV_PKGS=(libyaml-dev libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev libcmocka-dev)

# vm_kernel_pkg ARCH: the versioned kernel package the meta package depends on today (moves with
# Debian security updates, so never hard-coded).
vm_kernel_pkg()
{
	local arch=$1 meta=linux-image-${VM_FLAVOUR[$1]} dep
	dep=$(apt-cache depends "$meta:$arch" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
	[[ -n $dep ]] || vm_die "apt-cache knows no $meta:$arch (for ppc64el run: dpkg --add-architecture ppc64el && apt-get update; scripts/setup.sh does it)"
	printf '%s\n' "$dep"
}

# vm_fetch ARCH DIR PKG...: make DIR hold the candidate .deb of every PKG:ARCH, downloading only the
# missing ones (apt-get download, no root needed). Prints the .deb paths. One apt-cache call for all
# (each call costs seconds on a loaded machine). Exits 77 when no Debian mirror can be reached.
vm_fetch()
{
	local arch=$1 dir=$2 file missing=() files=() names
	shift 2
	mkdir -p "$dir"
	# apt-get download names the file PACKAGE_VERSION_ARCH.deb with the epoch colon as %3a
	names=$(apt-cache show --no-all-versions "${@/%/:$arch}" 2>/dev/null |
		awk '/^Package:/{p=$2} /^Version:/{v=$2} /^Architecture:/{a=$2} /^$/{if (p) print p, p "_" v "_" a ".deb"; p=""}
		     END{if (p) print p, p "_" v "_" a ".deb"}')
	for p in "$@"; do
		file=$(awk -v p="$p" '$1 == p {print $2; exit}' <<<"$names")
		[[ -n $file ]] || vm_die "no Debian package $p for $arch (apt-get update? dpkg --add-architecture $arch?)"
		file=${file//:/%3a}
		files+=("$dir/$file")
		[[ -f $dir/$file ]] || missing+=("$p:$arch")
	done
	if ((${#missing[@]})); then
		vm_log "download ${#missing[@]} packages for $arch: ${missing[*]}"
		if ! (cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "${missing[@]}" >/dev/null 2>"$dir/download.err"); then
			cat "$dir/download.err" >&2
			# no way to a Debian mirror (an offline machine): exit 77, the caller skips the lane
			if grep -Eq 'Could not resolve|Temporary failure resolving|Unable to connect|Could not connect|Network is unreachable|Connection timed out' "$dir/download.err"; then
				exit 77
			fi
			vm_die "apt-get download ${missing[*]}"
		fi
	fi
	for file in "${files[@]}"; do
		[[ -f $file ]] || vm_die "apt-get download left no $file"
	done
	printf '%s\n' "${files[@]}"
}

# vm_unpack OUT DEB...: dpkg-deb -x every DEB into OUT, redone only when the set of debs changed.
vm_unpack()
{
	local out=$1 stamp d
	shift
	stamp=$(printf '%s\n' "$@" | sort | md5sum | cut -d' ' -f1)
	[[ -f $out/.vm-stamp && $(cat "$out/.vm-stamp") == "$stamp" ]] && return 0
	vm_log "unpack $# packages into $out"
	rm -rf "$out"
	mkdir -p "$out"
	for d in "$@"; do
		dpkg-deb -x "$d" "$out" || vm_die "dpkg-deb -x $d"
	done
	echo "$stamp" >"$out/.vm-stamp"
}

# vm_real ROOT PATH: the regular file PATH names inside ROOT, following symlinks (absolute ones are
# taken relative to ROOT, as the guest will see them).
vm_real()
{
	local root=$1 p=$2 t i
	for ((i = 0; i < 16; i++)); do
		[[ -L $root$p ]] || { printf '%s\n' "$root$p"; return 0; }
		t=$(readlink "$root$p")
		[[ $t == /* ]] || t=$(dirname "$p")/$t
		p=$t
	done
	vm_die "symlink loop at $root$2"
}

# vm_install ROOT STAGE PATH...: copy each PATH of ROOT to the same path in STAGE (symlinks resolved).
vm_install()
{
	local root=$1 stage=$2 p src
	shift 2
	for p in "$@"; do
		src=$(vm_real "$root" "$p")
		[[ -f $src ]] || vm_die "no $p in the unpacked packages ($root)"
		mkdir -p "$stage$(dirname "$p")"
		cp "$src" "$stage$p"
	done
}

# vm_install_elf ROOT STAGE TRIPLET FILE...: put host FILEs (ELF, already at their stage paths) and
# every library they need, transitively, into STAGE; the libraries come from ROOT's /lib/TRIPLET or
# /usr/lib/TRIPLET (where the packages put them), the program interpreter too. A library already in
# STAGE's /lib/TRIPLET or /usr/lib/TRIPLET (ulnet's own) is taken as it is.
vm_install_elf()
{
	local root=$1 stage=$2 triplet=$3 f lib dir found interp
	shift 3
	local -a queue=("$@")
	local -A seen=()
	while ((${#queue[@]})); do
		f=${queue[0]}
		queue=("${queue[@]:1}")
		interp=$(readelf -l "$f" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
		if [[ -n $interp && -z ${seen[$interp]:-} ]]; then
			seen[$interp]=1
			vm_install "$root" "$stage" "$interp"
		fi
		for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[[ -z ${seen[$lib]:-} ]] || continue
			seen[$lib]=1
			found=
			for dir in /lib/$triplet /usr/lib/$triplet; do
				if [[ -e $stage$dir/$lib ]]; then # ours (libulnet), put there by the caller
					queue+=("$stage$dir/$lib")
					found=1
					break
				fi
				if [[ -e $root$dir/$lib ]]; then
					vm_install "$root" "$stage" "$dir/$lib"
					queue+=("$stage$dir/$lib")
					found=1
					break
				fi
			done
			[[ -n $found ]] || vm_die "$lib (needed by ${f#"$stage"}) is in none of the unpacked packages: add its package to VM_RUNTIME_PKGS"
		done
	done
}

# vm_module_order KROOT KVER MODULE...: the MODULEs and everything they depend on, each after its
# dependencies (from modules.dep, which depmod writes on our own unpacked copy: the ppc64el kernel
# package ships none). Prints paths relative to /lib/modules/KVER.
vm_module_order()
{
	local kroot=$1 kver=$2 m
	shift 2
	local dep=$kroot/lib/modules/$kver/modules.dep
	local -A path=() deps=() done=()
	local -a out=()
	local line key
	while IFS= read -r line; do
		key=${line%%:*}
		m=${key##*/}
		m=${m%.ko*}
		path[$m]=$key
		deps[$m]=${line#*:}
	done <"$dep"
	visit()
	{
		local m=$1 d dn
		[[ -n ${path[$m]:-} ]] || vm_die "kernel $kver has no module $m"
		[[ -z ${done[$m]:-} ]] || return 0
		done[$m]=1
		for d in ${deps[$m]}; do
			dn=${d##*/}
			visit "${dn%.ko*}"
		done
		out+=("${path[$m]}")
	}
	for m in "$@"; do
		visit "$m"
	done
	printf '%s\n' "${out[@]}"
}

# vm_kernel ARCH DEB OUT: unpack the kernel package into OUT once and run depmod on that copy.
vm_kernel()
{
	local arch=$1 deb=$2 out=$3 kver
	vm_unpack "$out" "$deb"
	kver=$(ls "$out/lib/modules")
	if [[ ! -s $out/lib/modules/$kver/modules.dep || $out/lib/modules/$kver/modules.dep -ot $out/.vm-stamp ]]; then
		vm_log "depmod for $kver"
		busybox depmod -b "$out" "$kver" || vm_die "depmod -b $out $kver"
	fi
}
