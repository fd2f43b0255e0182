#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Routing between two network namespaces: client C (tcp only, namespace NC) reaches server S (o2ib
# only, over the shm provider, namespace NR) through two ulnet routers R1 and R2 (tcp on the veth
# into NC, o2ib beside S in NR), C's and S's routes naming both gateways, the checker every second.
#  - route show, routing show and ping through the routers; the ping reply of a router says it routes
#  - ulnet-selftest brw write and read, C->S and S->C, 1 MiB and odd sizes at offsets 1 and 4097,
#    check=full, 0 errors, a 4 KiB-page client and a 64 KiB-page server; then the lst console drives a
#    batch through the routers
#  - R1 killed mid-brw: C and S mark their routes through it down within the checker's interval and
#    timeout, and the run goes on through R2: no mismatch, any error a classified one
#  - bad input: a route whose gateway is not on a local net, a route to a local net, a net with no
#    route; a router with routing disabled drops and counts
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
SST=$(dirname "$ULNETCTL")/../ulnet-selftest/ulnet-selftest
NC=ulnet-$$-c NR=ulnet-$$-r VC=ulr$$c VR=ulr$$r
C=10.213.0.1 R1T=10.213.0.2 R2T=10.213.0.3
R1O=127.213.0.1 R2O=127.213.0.2 SO=127.213.0.3
ul_step "namespaces $NC (client) and $NR (routers, server) joined by veth"
ul_netns_veth "$NC" "$VC" "$C" "$NR" "$VR" "$R1T" "$R2T"
checker="alive_router_check_interval: 1
    router_ping_timeout: 1"
o2ib_ni() # nid
{
	printf '    - net type: o2ib\n      local NI(s):\n        - nid: %s@o2ib\n          lnd tunables:\n              provider: shm\n              timeout: 5\n' "$1"
}
router() # name tcp-addr o2ib-addr page-size
{
	ul_start_in "$NR" "$1" <<EOF
node:
    page_size: $4
routing:
    enable: 1
    $checker
net:
    - net type: tcp
      local NI(s):
        - nid: $2@tcp
$(o2ib_ni "$3")
EOF
}
router r1 "$R1T" "$R1O" 4096
router r2 "$R2T" "$R2O" 65536
ul_start_in "$NR" s <<EOF
node:
    page_size: 65536
routing:
    $checker
net:
$(o2ib_ni "$SO")
route:
    - net: tcp
      gateway: $R1O@o2ib
    - net: tcp
      gateway: $R2O@o2ib
EOF
ul_start_in "$NC" c <<EOF
node:
    page_size: 4096
routing:
    $checker
net:
    - net type: tcp
      local NI(s):
        - nid: $C@tcp
route:
    - net: o2ib
      gateway: $R1T@tcp
      hop: 1
    - net: o2ib
      gateway: $R2T@tcp
      hop: 1
EOF

# wait_routes NODE N_UP: until route show -v on NODE lists N_UP routes up that the checker has heard
# from (a route starts up, before any answer, as LNet's do without check_routers_before_use)
wait_routes()
{
	local node=$1 want=$2 deadline n
	deadline=$(( $(ul__now_ms) + 20000 ))
	while :; do
		ul_ctl "$node" route show -v --json >"$UL_TMP/routes.json"
		n=$("$UL_PYTHON" -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1]))["route"] if r["state"] == "up" and r["checked_ago_ms"] >= 0))' "$UL_TMP/routes.json")
		(( n == want )) && return 0
		(( $(ul__now_ms) < deadline )) || ul_fail "$node: $n routes up, want $want: $(cat "$UL_TMP/routes.json")"
		sleep 0.1
	done
}

ul_step "the routes are up once the gateways answered the checker"
wait_routes c 2
wait_routes s 2
ul_json "$UL_TMP/routes.json" "all(0 <= r['checked_ago_ms'] < 20000 and r['type'] == 'single-hop' for r in j['route'])"

ul_step "ping through the routers, both ways"
ul_ctl c ping "$SO@o2ib" --count 3 >"$UL_TMP/p1" || ul_fail "ping $SO@o2ib from $C: $(cat "$UL_TMP/p1")"
grep -q "primary nid: $SO@o2ib" "$UL_TMP/p1" || ul_fail "ping reply does not name $SO@o2ib"
ul_ctl s ping "$C@tcp" >"$UL_TMP/p2" || ul_fail "ping $C@tcp from $SO: $(cat "$UL_TMP/p2")"

ul_step "selftest brw through the routers, both ways, check=full"
brw() # node from to op size offset
{
	ULNET_NODE=$(ul_sock "$1") timeout 60 "$SST" brw "$4" --from "$2" --to "$3" --size "$5" --offset "$6" \
		--concurrency 4 --duration 1 --check full --json >"$UL_TMP/r.json" ||
		{ cat "$UL_TMP/r.json" >&2; ul_fail "brw $4 $2 -> $3 size $5 offset $6"; }
	ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0 and j['bytes'] == j['rpcs'] * $5"
}
for pair in "c $C@tcp $SO@o2ib" "s $SO@o2ib $C@tcp"; do
	read -r node from to <<<"$pair"
	for op in write read; do
		for so in "1048576 0" "1048575 1" "1044479 4097" "65537 4097" "1 1"; do
			read -r size off <<<"$so"
			brw "$node" "$from" "$to" "$op" "$size" "$off"
		done
	done
done

ul_step "both routers forwarded, in byte-sized buffers; the client's routes carried it"
for r in r1 r2; do
	ul_ctl "$r" routing show --json >"$UL_TMP/$r.json"
	ul_json "$UL_TMP/$r.json" "j['routing'][-1]['forwarded']['msgs'] > 0 if isinstance(j['routing'], list) else True"
done
ul_ctl c route show -v --json >"$UL_TMP/routes.json"
ul_json "$UL_TMP/routes.json" "all(r['send_count'] > 0 for r in j['route'])"

ul_step "the lst console drives a brw batch through the routers"
lst() { ULNET_NODE=$(ul_sock c) timeout 60 "$SST" "$@" >"$UL_TMP/lst.out" 2>&1 || ul_fail "lst $*: $(cat "$UL_TMP/lst.out")"; }
lst new_session routed
lst add_group clients "$C@tcp"
lst add_group servers "$SO@o2ib"
lst add_batch b
lst add_test --batch b --concurrency 2 --from clients --to servers brw write check=full size=1M off=4097
lst add_test --batch b --from servers --to clients brw read check=full size=65535 off=1
lst run b
deadline=$(( $(ul__now_ms) + 60000 ))
until lst stat clients --delay 0.2 && grep -qE 'since run: [1-9][0-9]* RPCs ok' "$UL_TMP/lst.out"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "no RPCs through the routers: $(cat "$UL_TMP/lst.out")"
done
lst --json stop b
ul_json <(sed -n 1p "$UL_TMP/lst.out") "j['ok'] and j['rpcs'] > 0 and j['offset'] == 4097"
ul_json <(sed -n 2p "$UL_TMP/lst.out") "j['ok'] and j['rpcs'] > 0 and j['direction'] == 'server\u2192client'"
lst end_session

ul_step "R1 killed mid-brw: routes through it go down, the run goes on through R2 with no mismatch"
ULNET_NODE=$(ul_sock c) "$SST" brw write --from "$C@tcp" --to "$SO@o2ib" --size 1M --offset 4097 --concurrency 4 \
	--duration 6 --timeout 3 --check full --json >"$UL_TMP/k.json" 2>"$UL_TMP/k.err" &
kpid=$!
base=$(ul_stat r1 route_count)
ul_wait_stat r1 route_count $(( base + 16 ))
t0=$(ul__now_ms)
ul_stop_node r1 KILL
wait_routes c 1
wait_routes s 1
echo "routes through r1 down $(( $(ul__now_ms) - t0 )) ms after the kill" >&2
wait "$kpid" || true
cat "$UL_TMP/k.json" >&2
ul_json "$UL_TMP/k.json" "j['errors'].get('mismatch', 0) == 0 and j['rpcs'] > 0"
ul_ctl c route show -v --json >"$UL_TMP/routes.json"
ul_json "$UL_TMP/routes.json" "[r['state'] for r in j['route'] if r['gateway'] == '$R1T@tcp'] == ['down']"
brw c "$C@tcp" "$SO@o2ib" read 1048576 4097

ul_step "bad input: clear errors, counted drops"
ul_run "$UL_TMP/o" "$UL_TMP/e" "$ULNETCTL" --node "$(ul_sock c)" route add --net o2ib9 --gateway 10.9.9.9@tcp9
(( UL_STATUS != 0 )) && grep -q "not on a local net" "$UL_TMP/o" "$UL_TMP/e" "$(ul_log c)" ||
	ul_fail "route via a gateway on no local net: status $UL_STATUS"
ul_run "$UL_TMP/o" "$UL_TMP/e" "$ULNETCTL" --node "$(ul_sock c)" route add --net tcp --gateway "$R2T@tcp"
(( UL_STATUS != 0 )) || ul_fail "a route to a local net was accepted"
ul_run "$UL_TMP/o" "$UL_TMP/e" "$ULNETCTL" --node "$(ul_sock c)" ping 127.9.9.9@o2ib5 --timeout_ms 500
(( UL_STATUS != 0 )) || ul_fail "ping of a net with no route succeeded"

ul_step "a router with routing disabled drops and counts; its ping reply says so, and the routes go down"
ul_ctl c set alive_router_check_interval 0 >/dev/null # the route stays up: the message reaches r2
ul_ctl r2 set routing 0 >/dev/null
ul_run "$UL_TMP/o" "$UL_TMP/e" "$ULNETCTL" --node "$(ul_sock c)" ping "$SO@o2ib" --timeout_ms 1000
(( UL_STATUS != 0 )) || ul_fail "ping through a router with routing disabled succeeded"
ul_ctl r2 routing show --json >"$UL_TMP/r2.json"
ul_json "$UL_TMP/r2.json" "j['routing'][-1]['forwarded']['drops']['disabled'] >= 1"
ul_ctl c set alive_router_check_interval 1 >/dev/null
wait_routes c 0
ul_json "$UL_TMP/routes.json" "all(r['reason'] for r in j['route'])"
grep -q "routing is disabled on the gateway" "$UL_TMP/routes.json" || ul_fail "no reason: $(cat "$UL_TMP/routes.json")"
ul_ctl r2 set routing 1 >/dev/null
wait_routes c 1
brw c "$C@tcp" "$SO@o2ib" write 4097 1
ul_step "ok"
