#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# o2ib conns_per_peer between two ulnetd (shm provider) on 127.221.0.{3,4}@o2ib: n3 has the lnd
# tunable conns_per_peer 2, n4 the default 1. n3 pings n4 (4 pings) and writes 1 MiB RPCs to it (the
# RDMA rendezvous on both connections): `peer show -v` on each side counts 2 connections up, both
# used (each sent and received), and names the LNet MTU (lnet_mtu 1048576) apart from o2iblnd's
# negotiated message size (max_msg_size 4096), in JSON and in text. conns_per_peer 128 (past
# o2iblnd's 127) refuses to start naming the key and the range. n6 and n7 (127.221.0.{6,7}), both
# conns_per_peer 2, ping each other at once: both answered, and both count the same 2..4 connections.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP

ul_step "n3 (conns_per_peer 2) and n4 (default 1)"
ul_o2ib_node n3 221 3 4096 10 "conns_per_peer: 2"
ul_o2ib_node n4 221 4 65536 10
N3=$(ul_addr 221 3)@o2ib
N4=$(ul_addr 221 4)@o2ib

ul_step "n3 pings n4 and writes 1 MiB RPCs to it"
ul_ctl n3 ping "$N4" --count 4 --timeout_ms 5000 >/dev/null || ul_fail "n3 cannot ping n4"
ul_scenarios o2ib n3="$N3" n4="$N4"
SC_BRW_COUNT=8 sc_brw n3 n4 write 1048576 0

# limits of peer NID $2 as node $1 sees it, as JSON in $T/$1.json
limits_ok()
{
	local n=$1 nid=$2
	ul_ctl "$n" peer show -v --nid "$nid" --json >"$T/$n.json" || ul_fail "$n: peer show -v --nid $nid"
	ul_json "$T/$n.json" "[pn['limits'] for p in j['peer'] for pn in p['peer ni'] if pn['nid'] == '$nid'] == [
		{'max_frags': 257, 'queue_depth': 8, 'lnet_mtu': 1048576, 'max_msg_size': 4096, 'conns': 2,
		 'conns_used': 2}]"
}

ul_step "both sides count two connections, both used; lnet_mtu and max_msg_size each for what it is"
limits_ok n3 "$N4"
limits_ok n4 "$N3"
ul_ctl n3 peer show -v --nid "$N4" >"$T/n3.yaml"
for want in 'lnet_mtu: 1048576' 'max_msg_size: 4096' 'conns: 2' 'conns_used: 2'; do
	grep -q "^ *$want\$" "$T/n3.yaml" || ul_fail "peer show -v (text) lacks '$want': $(cat "$T/n3.yaml")"
done
grep -q 'max_msg_size: 1048576' "$T/n3.yaml" && ul_fail "max_msg_size still names the LNet MTU: $(cat "$T/n3.yaml")"

ul_step "n6 and n7 (both conns_per_peer 2) ping each other at once: a connection race, both answered"
ul_o2ib_node n6 221 6 4096 10 "conns_per_peer: 2"
ul_o2ib_node n7 221 7 4096 10 "conns_per_peer: 2"
N6=$(ul_addr 221 6)@o2ib
N7=$(ul_addr 221 7)@o2ib
ul_ctl n6 ping "$N7" --count 4 --timeout_ms 5000 >"$T/p6" 2>&1 &
p6=$!
ul_ctl n7 ping "$N6" --count 4 --timeout_ms 5000 >"$T/p7" 2>&1 || ul_fail "n7 cannot ping n6: $(cat "$T/p7")"
wait "$p6" || ul_fail "n6 cannot ping n7: $(cat "$T/p6")"
# whoever won the race, each side holds the same 2 to 4 connections (the winner's 2, and the loser's if
# they came up before the race), and the two sides agree on how many
ul_ctl n6 peer show -v --nid "$N7" --json >"$T/n6.json"
ul_ctl n7 peer show -v --nid "$N6" --json >"$T/n7.json"
for n in n6 n7; do
	ul_json "$T/$n.json" "all(2 <= pn['limits']['conns'] <= 4 for p in j['peer'] for pn in p['peer ni'])"
done
ul_json "$T/n6.json" "j['peer'][0]['peer ni'][0]['limits']['conns'] == $("$UL_PYTHON" -c "import json; print(json.load(open('$T/n7.json'))['peer'][0]['peer ni'][0]['limits']['conns'])")"

ul_step "conns_per_peer 128 refuses to start"
mkdir -p "$T/v"
cat >"$T/v/node.yaml" <<YAML
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 221 5)@o2ib
          lnd tunables:
              provider: shm
              conns_per_peer: 128
YAML
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/v/node.yaml" --control "$T/v/ctl.sock"
(( UL_STATUS != 0 )) || ul_fail "ulnetd with conns_per_peer 128 started"
grep -q "'conns_per_peer' out of range \[1, 127\]: 128" "$T/e" || ul_fail "the error does not name the range: $(cat "$T/e")"

ul_step "PASS"
