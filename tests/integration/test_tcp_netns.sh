#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two ulnetd in two network namespaces joined by a veth pair (10.211.T.0/24, addresses that exist only
# inside the namespaces): ping both ways over the acceptor on port 988, then selftest brw read and write
# (Put and Get of 0..1 MiB at non-zero offsets, full data check) between a 4 KiB and a 64 KiB-page node.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
SST=$(dirname "$ULNETCTL")/../ulnet-selftest/ulnet-selftest
NA=ulnet-$$-a NB=ulnet-$$-b VA=ulv$$a VB=ulv$$b
A=10.211.0.1 B=10.211.0.2
ul_step "namespaces $NA and $NB joined by veth"
ul_netns_veth "$NA" "$VA" "$A" "$NB" "$VB" "$B"
start_in() { # ns name addr page_size iface
	ul_start_in "$1" "$2" <<EOF
node:
    page_size: $4
net:
    - net type: tcp
      local NI(s):
        - interfaces:
              0: $5
EOF
}
start_in "$NA" a "$A" 4096 "$VA"
start_in "$NB" b "$B" 65536 "$VB"

ul_step "NIDs come from the interfaces"
ul_ctl a net show --json >"$UL_TMP/a.json"
ul_json "$UL_TMP/a.json" "j['net'][1]['local NI(s)'][0]['nid'] == '$A@tcp'"

ul_step "ping both ways across the veth"
ul_ctl a ping "$B@tcp" --count 3 >"$UL_TMP/p1" || ul_fail "ping $B@tcp from $A"
grep -q "primary nid: $B@tcp" "$UL_TMP/p1" || ul_fail "ping reply does not name $B@tcp"
ul_ctl b ping "$A@tcp" >"$UL_TMP/p2" || ul_fail "ping $A@tcp from $B"
grep -q "primary nid: $A@tcp" "$UL_TMP/p2" || ul_fail "ping reply does not name $A@tcp"

ul_step "selftest brw across namespaces, both nodes as client"
for pair in "a $A $B" "b $B $A"; do
	read -r node from to <<<"$pair"
	for op in write read; do
		for so in "1 1" "4095 4097" "4096 8" "65536 1" "1048576 4097"; do
			read -r size off <<<"$so"
			ULNET_NODE=$(ul_sock "$node") "$SST" brw $op --from "$from@tcp" --to "$to@tcp" --size "$size" \
				--offset "$off" --concurrency 2 --duration 1 --check full --json >"$UL_TMP/r.json" ||
				{ cat "$UL_TMP/r.json" >&2; ul_fail "brw $op $from -> $to size $size offset $off"; }
			ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0 and j['bytes'] == j['rpcs'] * $size"
		done
	done
done
ul_step "ok"
