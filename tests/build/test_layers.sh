#!/usr/bin/env bash
# The build refuses an upward include. Each layer of the library compiles with its own include path
# (src/meson.build), so a header from a layer above is not found. On a copy of the source tree this
# adds one upward include at a time to a file of a lower layer and checks that its object no longer
# builds, for the reason that the header is not found; the unmodified copy builds the same objects.
# A relative include ("../core/lnd.h") would get round include paths, so no source may use one.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
if grep -rnE '#include +"\.\./' "$src/src"; then
	echo "FAIL: a relative include reaches out of its directory (above)"
	fail=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tmp" -xf -
if ! meson setup "$tmp/b" "$tmp" -Dtests=false -Dbuildtype=plain >"$tmp/setup.log" 2>&1; then
	cat "$tmp/setup.log"
	exit 1
fi
# file, layer library, the header it must not see (the layer above that defines it)
cases=(
	"src/util/log.c ulnet_util internal.h"        # util: no core
	"src/util/clock.c ulnet_util fabric.h"         # util: no fabric
	"src/fabric/fabric_limits.c ulnet_fabric lnd.h"   # fabric: not the LND SDK
	"src/fabric/shm/shm_ring.c ulnet_fabric internal.h"
	"src/core/eq.c ulnet_core tcp.h"               # core: no LND
	"src/core/ni.c ulnet_core fabric.h"            # core: no fabric
	"src/lnd/lo/lo.c ulnet_lnd_lo internal.h"        # an LND: the SDK, not the core's internals
	"src/selftest/sst_wire.c ulnet_selftest lnd.h" # selftest: the public API and util only
)
obj() { # file, library: the object's ninja target
	local f=${1#src/}
	echo "src/lib$2.a.p/${f//\//_}.o"
}
for c in "${cases[@]}"; do
	read -r file lib hdr <<<"$c"
	target=$(obj "$file" "$lib")
	if ! ninja -C "$tmp/b" "$target" >"$tmp/ok.log" 2>&1; then
		echo "FAIL: $file does not build unmodified ($target)"; tail -5 "$tmp/ok.log"; fail=1; continue
	fi
	cp "$tmp/$file" "$tmp/orig.c"
	printf '#include "%s"\n' "$hdr" | cat - "$tmp/orig.c" >"$tmp/$file"
	if ninja -C "$tmp/b" "$target" >"$tmp/up.log" 2>&1; then
		echo "FAIL: $file builds with #include \"$hdr\" (an upward include)"; fail=1
	elif ! grep -qE "$hdr: No such file|'$hdr' file not found" "$tmp/up.log"; then # gcc | clang
		echo "FAIL: $file with #include \"$hdr\" failed for another reason:"; tail -5 "$tmp/up.log"; fail=1
	else
		echo "ok: $file cannot include $hdr"
	fi
	cp "$tmp/orig.c" "$tmp/$file"
done
exit $fail
