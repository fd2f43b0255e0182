#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Three ulnetd on 127.35.0.{1,2,3} (tcp LND, port 988, pages 4 KiB / 64 KiB / 4 KiB): every node
# pings every other both ways; lnd tunables show up in net show -v; a forced V1 node and a V2 node
# with checksums talk to a default (V3) node; an unknown lnd tunable refuses to start, naming the key.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=$UL_TMP

start()
{
	local n=$1 ps=$2 extra=${3:-}
	ul_start_node "n$n" <<YAML
node:
    page_size: $ps
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 35 "$n")@tcp
          lnd tunables:
              timeout: 10
$extra
YAML
}

ul_step "start three nodes"
start 1 4096
start 2 65536
start 3 4096

ul_step "ping every pair both ways"
for a in 1 2 3; do
	for b in 1 2 3; do
		(( a == b )) && continue
		ul_ctl "n$a" ping "$(ul_addr 35 "$b")@tcp" --count 2 --timeout_ms 5000 --json >"$T/p.json" \
			|| ul_fail "n$a -> n$b ping failed"
		ul_json "$T/p.json" "len(j['ping']) == 2 and j['ping'][0]['primary nid'] == '$(ul_addr 35 "$b")@tcp'"
	done
done

ul_step "lnd tunables in net show -v"
ul_ctl n1 net show -v >"$T/net.out"
grep -Eq 'accept: secure' "$T/net.out" || ul_fail "no accept in net show -v: $(cat "$T/net.out")"
grep -Eq 'timeout: 10' "$T/net.out" || ul_fail "no timeout 10 in net show -v: $(cat "$T/net.out")"
ul_ctl n1 net show -v --json >"$T/net.json"
ul_json "$T/net.json" 'any(n["net type"] == "tcp" for n in j["net"]) and all(ni["lnd tunables"]["accept"] == "secure" and ni["lnd tunables"]["timeout"] == 10 and ni["lnd tunables"]["nagle"] == 0 for n in j["net"] if n["net type"] == "tcp" for ni in n["local NI(s)"])'

ul_step "peer limits in peer show -v"
ul_ctl n1 peer show -v --json >"$T/peer.json"
ul_json "$T/peer.json" 'len(j["peer"]) > 0 and all(pn["limits"]["lnet_mtu"] == 1048576 and "max_msg_size" not in pn["limits"] and pn["limits"]["queue_depth"] > 0 for p in j["peer"] for pn in p["peer ni"])'

ul_step "forced V1 and V2 (checksums) nodes against V3"
start 4 4096 "              protocol: 1"
start 5 4096 "              protocol: 2
              enable_csum: 1"
for n in 4 5; do
	ul_ctl "n$n" ping "$(ul_addr 35 1)@tcp" --timeout_ms 5000 >/dev/null || ul_fail "n$n -> n1"
	ul_ctl n1 ping "$(ul_addr 35 "$n")@tcp" --timeout_ms 5000 >/dev/null || ul_fail "n1 -> n$n"
done

ul_step "unknown lnd tunable: refused, one line naming it"
mkdir -p "$T/bad"
cat >"$T/bad/node.yaml" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 35 9)@tcp
          lnd tunables:
              frobnicate: 1
YAML
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/bad/node.yaml" --control "$T/bad/ctl.sock"
(( UL_STATUS != 0 )) || ul_fail "ulnetd started with an unknown lnd tunable"
grep -q "frobnicate" "$T/e" "$T/o" || ul_fail "the error does not name the key: $(cat "$T/e" "$T/o")"

ul_step "PASS"
