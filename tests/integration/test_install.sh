#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed library as a user gets it: `meson install --destdir` into a scratch root, libulnet.so
# exports only ulnet_* symbols, the public headers compile, and the tools build from their sources
# against the installed library through pkg-config alone (no source-tree include path, no internal
# static library), then run: the installed ulnetd, ulnetctl and ulnet-selftest on one lo-only node.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP
DEST=$T/root
# The tools are built as the library was: its compiler (from compile_commands.json) and its
# sanitizers (an ASan library needs an ASan program)
read -r CC SAN < <(python3 - "$BUILD" <<'PY'
import json, shlex, subprocess, sys
b = sys.argv[1]
cc = shlex.split(json.load(open(b + "/compile_commands.json"))[0]["command"])[0]
opts = json.loads(subprocess.check_output(["meson", "introspect", "--buildoptions", b]))
san = next((o["value"] for o in opts if o["name"] == "b_sanitize"), "none")
print(cc, san)
PY
)

ul_step "meson install --destdir"
meson install -C "$BUILD" --destdir "$DEST" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
	ul_fail "meson install failed: $(tail -5 "$T/install.log")"
pc=$(find "$DEST" -name ulnet.pc | head -1)
[[ -n $pc ]] || ul_fail "no ulnet.pc installed"
so=$(find "$DEST" -name 'libulnet.so' | head -1)
[[ -n $so ]] || ul_fail "no libulnet.so installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
# the .pc file names the final prefix; inside the scratch root it is $DEST$prefix
pkg() { PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$DEST$prefix" "$@" ulnet; }
pkg --exists || ul_fail "pkg-config does not find ulnet in $(dirname "$pc")"
for h in ulnet.h nid.h md.h event.h node.h tunable.h; do
	[[ -f $DEST$prefix/include/ulnet/$h ]] || ul_fail "public header ulnet/$h not installed"
done

ul_step "nm -D: only ulnet_* symbols"
# (the version node ULNET_0 is an absolute symbol "A", not a function or object: left out here)
nm -D --defined-only "$so" >"$T/nm"
awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' "$T/nm" >"$T/exports"
# every exported symbol carries libulnet.map's version (debian/libulnet0.symbols relies on it)
if awk '$2 != "A" && $3 !~ /@@ULNET_0$/' "$T/nm" | grep . >"$T/unversioned"; then
	ul_fail "libulnet.so exports $(wc -l <"$T/unversioned") symbol(s) without the version ULNET_0: $(head -3 "$T/unversioned" | tr '\n' ' ')"
fi
[[ -s $T/exports ]] || ul_fail "libulnet.so exports nothing"
grep -q '^ulnet_node_open$' "$T/exports" || ul_fail "ulnet_node_open not exported"
if grep -v '^ulnet_' "$T/exports" >"$T/bad" || grep '^ulnet__' "$T/exports" >>"$T/bad"; then
	ul_fail "libulnet.so exports $(wc -l <"$T/bad") symbol(s) outside the public API: $(head -5 "$T/bad" | tr '\n' ' ')"
fi
ul_step "$(wc -l <"$T/exports") exported symbols, all ulnet_*"

# Each tool: its own directory's sources, plus the control protocol framing it shares with ulnetd.
# Nothing from src/ and no include path but the tool's own directories and pkg-config's.
CFLAGS=(-std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -I"$SRC/tools/ulnetd")
[[ $SAN == none ]] || CFLAGS+=(-fsanitize="$SAN")
build_tool()
{
	local name=$1
	shift
	ul_step "build $name against the installed library"
	# shellcheck disable=SC2046
	"$CC" "${CFLAGS[@]}" "$@" -o "$T/bin/$name" $(pkg --cflags --libs) -lm >"$T/$name.cc.log" 2>&1 ||
		ul_fail "$name does not build against the installed library: $(head -20 "$T/$name.cc.log")"
	# to a file: `ldd | grep -q` can fail under pipefail when grep exits first
	LD_LIBRARY_PATH=$(dirname "$so") ldd "$T/bin/$name" >"$T/$name.ldd"
	grep -q "$(dirname "$so")/libulnet.so" "$T/$name.ldd" ||
		ul_fail "$name is not linked to the installed libulnet.so: $(cat "$T/$name.ldd")"
}
mkdir -p "$T/bin"
build_tool ulnet-selftest "$SRC"/tools/ulnet-selftest/*.c "$SRC/tools/ulnetd/ctl_proto.c"
build_tool ulnetctl "$SRC"/tools/ulnetctl/*.c "$SRC/tools/ulnetd/ctl_proto.c"
build_tool ulnetd "$SRC"/tools/ulnetd/*.c -pthread

ul_step "run the installed ulnetd, ulnetctl and ulnet-selftest"
LD_LIBRARY_PATH=$(dirname "$so")
export LD_LIBRARY_PATH
ULNETD=$T/bin/ulnetd
ULNETCTL=$T/bin/ulnetctl
ul_start_node n1 <<EOF
net:
    - net type: lo
EOF
"$T/bin/ulnet-selftest" --node "$(ul_sock n1)" stat --json >"$T/stat.json" 2>"$T/stat.err" ||
	ul_fail "installed ulnet-selftest stat failed: $(cat "$T/stat.err")"
ul_json "$T/stat.json" '"selftest" in j and j["selftest"]["session"] is False'
"$T/bin/ulnetctl" --node "$(ul_sock n1)" ping 0@lo --json >"$T/ping.json" 2>"$T/ping.err" ||
	ul_fail "installed ulnetctl ping failed: $(cat "$T/ping.err")"
ul_json "$T/ping.json" 'j["ping"][0]["primary nid"] == "0@lo"'
# the planner is the library's; a build without the o2ib LND says so
if "$T/bin/ulnetctl" plan --len 8K --json >"$T/plan.json" 2>"$T/plan.err"; then
	ul_json "$T/plan.json" 'isinstance(j, dict) and len(j) > 0'
else
	grep -q 'o2ib LND is not built' "$T/plan.err" || ul_fail "installed ulnetctl plan failed: $(cat "$T/plan.err")"
fi
ul_step "ok"
