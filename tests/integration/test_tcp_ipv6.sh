#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# IPv6 NIDs: two ulnetd on fd00:ul::1 and fd00:ul::2, addresses that exist only on the loopback of a
# private network namespace. socklnd uses the large-NID acceptor request and HELLO V4 (80 bytes) with
# the 96-byte LNet header there; ping (large-address ping info) and selftest brw must work end to end.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ip netns list >/dev/null 2>&1 || { echo "skip: no network namespaces here"; exit 77; }
ul_init
SST=$(dirname "$ULNETCTL")/../ulnet-selftest/ulnet-selftest
NS=ulnet-$$-v6
A=fd00:ab::1 B=fd00:ab::2
UL_ATEXIT+=("ip netns del $NS")
ip netns add "$NS" 2>/dev/null || { echo "skip: cannot create a network namespace here"; exit 77; }
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$A/128" dev lo nodad
ip -n "$NS" addr add "$B/128" dev lo nodad
cat >"$UL_TMP/wrap" <<EOF
#!/bin/sh
exec ip netns exec $NS $ULNETD "\$@"
EOF
chmod +x "$UL_TMP/wrap"
ULNETD=$UL_TMP/wrap
start() { # name address page_size
	ul_start_node "$1" <<EOF
node:
    page_size: $3
net:
    - net type: tcp
      local NI(s):
        - nid: $2@tcp
EOF
}
start a "$A" 4096
start b "$B" 65536

ul_step "ping both ways with IPv6 NIDs"
ul_ctl a ping "$B@tcp" --json >"$UL_TMP/p.json" || ul_fail "ping $B@tcp"
ul_json "$UL_TMP/p.json" "j['ping'][0]['primary nid'] == '$B@tcp'"
ul_ctl b ping "[$A]@tcp" >"$UL_TMP/p2" || ul_fail "ping [$A]@tcp"
grep -q "primary nid: $A@tcp" "$UL_TMP/p2" || ul_fail "ping reply does not name $A@tcp"

ul_step "selftest brw over IPv6 (V4 framing), 4 KiB <-> 64 KiB pages"
for op in write read; do
	ULNET_NODE=$(ul_sock a) "$SST" brw $op --from "$A@tcp" --to "$B@tcp" --size 1M --offset 4097 \
		--concurrency 2 --duration 1 --check full --json >"$UL_TMP/r.json" ||
		{ cat "$UL_TMP/r.json" >&2; ul_fail "brw $op over IPv6"; }
	ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0"
done
ul_step "ok"
