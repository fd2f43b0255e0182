#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The package lane (docs/packaging.md): ulnet as an admin installs and runs it. On a copy of the tree:
# dpkg-buildpackage -us -uc -b, lintian (no errors), apt-get install of the three packages; then the
# installed files only (/usr/bin, /usr/lib/<multiarch>, /lib/systemd/system, /usr/share/man, the
# bash completion): a program built with pkg-config against libulnet-dev, two ulnetd nodes on
# 127.225.0.1 and 127.225.0.2 under what ulnetd@.service allows (its capabilities only, no_new_privs,
# a read-only root but /run/ulnet, empty /tmp /home /root, its system-call filter, address families,
# no W+X memory, no namespaces) pinging and running brw over tcp (port 988)
# and over o2ib on the shm provider, a SIGHUP reload, completion of commands and of the peers' NIDs,
# systemd-analyze verify of the unit, and every man page through groff -ww, man --warnings and
# mandoc -T lint. At the end, and on any failure, the packages are purged: no later lane finds an
# installed libulnet.
# Each step is one case; the last line is "pkg lane: N passed, N failed". Exit 0 when none failed, 77
# when the lane cannot run here (not root, no dpkg-buildpackage), 1 otherwise.
# ULNET_PKG_DIR: the work directory (default build-pkg in the tree); its lane.log has every command's
# output.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SRC=$PWD
W=${ULNET_PKG_DIR:-$SRC/build-pkg}
PKGS=(libulnet0 libulnet-dev ulnet-tools)
A1=127.225.0.1 A2=127.225.0.2
RUN=/run/ulnet
passed=0 failed=0
declare -a PIDS=()

if [[ $(id -u) != 0 ]]; then
	echo "pkg lane: skipped: needs root (apt-get install, port 988)"
	exit 77
fi
for t in dpkg-buildpackage lintian scdoc systemd-analyze groff mandoc setpriv unshare; do
	if ! command -v "$t" >/dev/null; then
		echo "pkg lane: skipped: no $t (bash scripts/setup.sh installs it)"
		exit 77
	fi
done
if ! /usr/bin/python3 -c 'import seccomp' 2>/dev/null; then
	echo "pkg lane: skipped: no python3-seccomp (bash scripts/setup.sh installs it)"
	exit 77
fi

ok() { echo "pkg: ok: $*"; passed=$((passed + 1)); }
bad() { echo "pkg: FAIL: $*"; failed=$((failed + 1)); }
# step NAME CMD...: one case, its output in $W/NAME.log (shown on failure)
step()
{
	local name=$1 t0=$SECONDS
	shift
	if "$@" >"$W/$name.log" 2>&1; then
		ok "$name ($((SECONDS - t0)) s)"
		return 0
	fi
	bad "$name ($((SECONDS - t0)) s); its last lines:"
	tail -25 "$W/$name.log" | sed 's/^/    /'
	return 1
}

purge()
{
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	PIDS=()
	if dpkg-query -W "${PKGS[@]}" >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${PKGS[@]}" >"$W/purge.log" 2>&1 ||
			echo "pkg: apt-get purge failed: $(tail -3 "$W/purge.log")"
	fi
	rm -f "$RUN"/pkg-n1.* "$RUN"/pkg-n2.* "$RUN/pkg-sandbox.py"
}
finish()
{
	purge
	echo "pkg lane: ${passed} passed, ${failed} failed"
	((failed == 0)) || exit 1
	exit 0
}
trap finish EXIT

rm -rf "$W" && mkdir -p "$W/src" "$W/etc"
# a package already installed (an earlier run that died) would hide a missing file
purge

# ---- build ----
build()
{
	# a copy without build directories and git state: dpkg-buildpackage cleans and writes ../*.deb
	tar --exclude='./build*' --exclude=./.git --exclude='./obj-*' --exclude=./tmp -cf - . | tar -xf - -C "$W/src" &&
		cd "$W/src" && dpkg-buildpackage -us -uc -b
}
if ! step build build; then
	exit 1
fi
changes=$(ls "$W"/ulnet_*.changes)
debs=()
for p in "${PKGS[@]}"; do debs+=("$(ls "$W/${p}"_*.deb)"); done

# ---- lintian: no errors; the tags it gives are listed ----
lint()
{
	lintian --fail-on error --tag-display-limit 0 -I "$changes"
	local rc=$?
	echo "lintian exit status $rc"
	return $rc
}
step lintian lint
echo "pkg: lintian: $(grep -c '^E:' "$W/lintian.log") errors, $(grep -c '^W:' "$W/lintian.log") warnings, $(grep -c '^I:' "$W/lintian.log") info tags"
grep -E '^[EW]:' "$W/lintian.log" | sed 's/^/    /'

# ---- install ----
step install env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}" || exit 1

files()
{
	local ma f
	ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	for f in /usr/bin/ulnetd /usr/bin/ulnetctl /usr/bin/ulnet-selftest /lib/systemd/system/ulnetd@.service \
		/usr/lib/"$ma"/libulnet.so.0 /usr/lib/"$ma"/libulnet.so /usr/lib/"$ma"/libulnet.a \
		/usr/lib/"$ma"/pkgconfig/ulnet.pc /usr/include/ulnet/ulnet.h /usr/share/man/man8/ulnetd.8.gz \
		/usr/share/man/man8/ulnetctl.8.gz /usr/share/man/man8/ulnet-selftest.8.gz \
		/usr/share/man/man5/ulnet.yaml.5.gz /usr/share/bash-completion/completions/ulnetctl \
		/usr/share/bash-completion/completions/ulnet-selftest /etc/ulnet; do
		[[ -e $f ]] || { echo "not installed: $f"; return 1; }
	done
	# the tools run the packaged library, not a build tree's
	ldd /usr/bin/ulnetd | tee "$W/ldd.txt"
	grep -q "libulnet.so.0 => /usr/lib/$ma/libulnet.so.0" "$W/ldd.txt" || grep -q "libulnet.so.0 => /lib/$ma/libulnet.so.0" "$W/ldd.txt" ||
		{ echo "ulnetd does not use /usr/lib/$ma/libulnet.so.0"; return 1; }
	objdump -T /usr/bin/ulnetctl | grep -q 'ULNET_0' || { echo "ulnetctl binds no ULNET_0 symbol"; return 1; }
	/usr/bin/ulnetd --version
}
step installed-files files

devprog()
{
	cat >"$W/prog.c" <<'C'
#include <stdio.h>
#include <ulnet/ulnet.h>
int main(void) { printf("%s\n", ulnet_version()); return 0; }
C
	# shellcheck disable=SC2046
	cc -std=c11 -Wall -Wextra -Werror -o "$W/prog" "$W/prog.c" $(pkg-config --cflags --libs ulnet) &&
		[[ $("$W/prog") == "$(pkg-config --modversion ulnet)" ]] &&
		pkg-config --static --libs ulnet
}
step dev-package devprog

# ---- two nodes under the unit's restrictions ----
# What ulnetd@.service gives ulnetd (docs/packaging.md): CapabilityBoundingSet/AmbientCapabilities,
# NoNewPrivileges (setpriv); ProtectSystem=strict with the RuntimeDirectory writable, PrivateTmp,
# ProtectHome (a private mount namespace); SystemCallFilter=@system-service, SystemCallArchitectures,
# RestrictAddressFamilies, MemoryDenyWriteExecute, RestrictNamespaces (seccomp: sandbox.py).
node()
{
	local name=$1 addr=$2 o2ib=$3
	mkdir -p "$RUN"
	# the node's file and the filter go in the one directory it sees (a clone under /tmp or /home is
	# hidden from it, as from the unit)
	cp "$SRC/tests/pkg/sandbox.py" "$RUN/pkg-sandbox.py"
	cat >"$RUN/pkg-$name.yaml" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $addr@tcp
    - net type: o2ib
      local NI(s):
        - nid: $o2ib@o2ib
          lnd tunables:
              provider: shm
YAML
	unshare --mount --propagation private sh -c '
		mount --bind "$1" "$1" && mount -o remount,bind,ro / &&
		mount -t tmpfs tmpfs /tmp && { [ ! -d /home ] || mount -t tmpfs tmpfs /home; } && mount -t tmpfs tmpfs /root &&
		exec setpriv --no-new-privs --bounding-set=-all,+net_bind_service,+ipc_lock \
			--inh-caps=-all,+net_bind_service,+ipc_lock --ambient-caps=-all,+net_bind_service,+ipc_lock \
			/usr/bin/python3 "$4" /usr/bin/ulnetd -c "$2" --control "$3" -v' \
		sh "$RUN" "$RUN/pkg-$name.yaml" "$RUN/pkg-$name.sock" "$RUN/pkg-sandbox.py" \
		>"$W/$name.ulnetd.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		/usr/bin/ulnetctl --node "$RUN/pkg-$name.sock" net show >/dev/null 2>&1 && return 0
		kill -0 "${PIDS[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "ulnetd $name did not start: $(cat "$W/$name.ulnetd.log")"
	return 1
}
twonodes()
{
	node n1 "$A1" 127.225.1.1 && node n2 "$A2" 127.225.1.2 || return 1
	# the capabilities ulnetd runs with: the unit's two, nothing else
	grep -E '^Cap(Eff|Bnd)' "/proc/${PIDS[0]}/status" 2>/dev/null || true
	local pid
	pid=$(pgrep -f "ulnetd -c $RUN/pkg-n1.yaml" | head -1)
	grep -q '^CapBnd:\s*0*4400$' "/proc/$pid/status" ||
		{ echo "ulnetd's bounding set: $(grep CapBnd "/proc/$pid/status")"; return 1; }
	grep -q '^NoNewPrivs:\s*1' "/proc/$pid/status" || { echo "no NoNewPrivs"; return 1; }
	ss -ltnp | grep "$A1:988" || { echo "n1 does not listen on $A1:988"; return 1; }
}
step two-nodes twonodes || exit 1

C1=(/usr/bin/ulnetctl --node "$RUN/pkg-n1.sock")
S1=(/usr/bin/ulnet-selftest --node "$RUN/pkg-n1.sock")
step ping-tcp "${C1[@]}" ping "$A2@tcp" --count 3
step ping-o2ib "${C1[@]}" ping 127.225.1.2@o2ib --count 3
step brw-tcp "${S1[@]}" brw write --from "$A1@tcp" --to "$A2@tcp" --size 1M --offset 4097 --count 40 --concurrency 4 --check full
step brw-o2ib "${S1[@]}" brw read --from 127.225.1.1@o2ib --to 127.225.1.2@o2ib --size 1M --count 40 --concurrency 4 --check full

reload()
{
	# SIGHUP: n1 applies its edited file (a route) as `systemctl reload` would have it
	cat >>"$RUN/pkg-n1.yaml" <<YAML
route:
    - net: tcp9
      gateway: $A2@tcp
YAML
	kill -HUP "$(pgrep -f "ulnetd -c $RUN/pkg-n1.yaml" | head -1)"
	for _ in $(seq 50); do
		"${C1[@]}" route show | grep -q tcp9 && grep 'SIGHUP' "$W/n1.ulnetd.log" && return 0
		sleep 0.1
	done
	cat "$W/n1.ulnetd.log"
	return 1
}
step reload reload

completion()
{
	# as an interactive shell has it: bash-completion loads the installed file on demand
	bash -c '
		source /usr/share/bash-completion/bash_completion
		export ULNET_NODE=$1
		comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
			COMPREPLY=(); __load_completion "$1"; $(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/"); echo "${COMPREPLY[*]}"; }
		# want WORD ARGS...: the completion of ARGS offers WORD
		want() { local w=$1 r; shift; r=$(comp "$@"); echo "$* -> $r"; grep -qw -- "$w" <<<"$r"; }
		want ping ulnetctl "" && want add ulnetctl route "" && want "$2@tcp" ulnetctl ping "" &&
			want "$2@tcp" ulnetctl route add --gateway "" && want tcp ulnetctl net show --net "" &&
			want new_session ulnet-selftest "" && want "$2@tcp" ulnet-selftest brw write --to "" &&
			want full ulnet-selftest brw write --check ""
	' sh "$RUN/pkg-n1.sock" "$A2"
}
step completion completion

# ---- the unit and the man pages ----
verify()
{
	# verify prints problems (an unknown key, a bad value) and exits 0 all the same: any output fails
	systemd-analyze verify ulnetd@pkg.service >"$W/verify.out" 2>&1
	local rc=$?
	cat "$W/verify.out"
	[[ $rc == 0 && ! -s $W/verify.out ]] || return 1
	systemd-analyze security --offline=yes ulnetd@pkg.service | tail -1
}
step systemd-analyze-verify verify
echo "pkg: $(tail -1 "$W/systemd-analyze-verify.log")"

manpages()
{
	local p out rc=0
	for p in /usr/share/man/man8/ulnetd.8.gz /usr/share/man/man8/ulnetctl.8.gz \
		/usr/share/man/man8/ulnet-selftest.8.gz /usr/share/man/man5/ulnet.yaml.5.gz; do
		out=$(zcat "$p" | groff -ww -man -z 2>&1)
		[[ -z $out ]] || { echo "groff -ww $p: $out"; rc=1; }
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
		[[ -z $out ]] || { echo "man --warnings -l $p: $out"; rc=1; }
		mandoc -T lint -W error "$p" || { echo "mandoc -T lint -W error $p failed"; rc=1; }
		echo "$p: $(man -l "$p" 2>/dev/null | wc -l) lines"
	done
	return $rc
}
step man-pages manpages
