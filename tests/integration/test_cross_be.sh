#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Heterogeneous nodes: a big-endian ppc64 node with 64 KiB pages (qemu-user) and a native x86_64
# node with 4 KiB pages. The foreign node is tests/cross/xnode.c built statically from the same
# sources. Checks byte-swapped hello and ping info, and selftest brw (up to 1 MiB at unaligned offsets,
# full data check) in both data directions. Skips (77) when the cross compiler or qemu is missing.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_xnode_require
ul_require_root "its tcp nodes listen on port 988"
ul_init
SST=$(dirname "$ULNETCTL")/../ulnet-selftest/ulnet-selftest
X=$UL_TMP/xnode.ppc64
ul_xnode_build "$X"

A=$(ul_addr 61 1)
B=$(ul_addr 61 2)
ul_start_node native <<EOF
node:
    page_size: 4096
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
EOF
"$QEMU_BE" -p 65536 "$X" "$B@tcp" 65536 >"$UL_TMP/xnode.log" 2>&1 &
XPID=$!
stop_x() { kill "$XPID" 2>/dev/null || true; wait "$XPID" 2>/dev/null || true; }
fail_x() { cat "$UL_TMP/xnode.log" >&2; stop_x; ul_fail "$*"; }
for _ in $(seq 100); do grep -q "xnode ready" "$UL_TMP/xnode.log" && break; sleep 0.1; done
grep -q "ready: $B@tcp page_size 65536 big-endian host page 65536" "$UL_TMP/xnode.log" ||
	fail_x "xnode did not start as a big-endian 64 KiB-page node"

ul_step "ping the big-endian node (byte-swapped hello and ping info)"
ul_ctl native ping "$B@tcp" --json >"$UL_TMP/ping.json" || fail_x "ping $B@tcp failed"
"$UL_PYTHON" - "$UL_TMP/ping.json" "$B@tcp" <<'PY' || fail_x "ping reply lacks $B@tcp"
import json, sys
j = json.load(open(sys.argv[1]))
assert sys.argv[2] in json.dumps(j), j
PY

ul_step "selftest brw between 4 KiB little-endian and 64 KiB big-endian"
for op in write read; do
	for so in "1048576 4097" "4097 1" "65535 65537" "1 4095"; do
		read -r size off <<<"$so"
		ULNET_NODE=$(ul_sock native) "$SST" brw $op --from "$A@tcp" --to "$B@tcp" --size "$size" \
			--offset "$off" --concurrency 2 --duration 1 --check full --json >"$UL_TMP/r.json" ||
			{ cat "$UL_TMP/r.json" >&2; fail_x "brw $op size $size offset $off failed"; }
		ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0 and j['bytes'] == j['rpcs'] * $size"
	done
done
stop_x
ul_step "ok"
