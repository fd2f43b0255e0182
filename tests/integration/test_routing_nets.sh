#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Forwarding between every pair of kinds of net, and over two routers, with real LNDs on 127.214.x:
#   A 127.214.0.1@tcp --- R1 (@tcp, 127.214.1.2@tcp1) --- B 127.214.1.4@tcp1
#                         R1 --tcp1-- R2 (127.214.1.3@tcp1, 127.214.2.3@o2ib, 127.214.3.3@o2ib1)
#   C 127.214.2.4@o2ib --- R2 --- D 127.214.3.4@o2ib1          (o2ib over the shm provider)
# tcp->tcp1 (A->B through R1), o2ib->o2ib1 (C->D through R2), and tcp->o2ib1 over two routers (A->D:
# A's route names R1 with hop 2, R1 forwards to its own gateway R2): ulnet-selftest brw write and
# read both ways, 1 MiB at offset 4097 and 65537 bytes at offset 1, check=full, 0 errors. A route
# whose gateway has no NI on the net is multi-hop, judged by the gateway's answer. A router short of
# buffers (one large buffer, 1 MiB of memory) makes messages wait, counted, and drops nothing. A
# corrupt rule on R1 (docs/faults.md) corrupts what it forwards: B's check=full catches it.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
SST=$(dirname "$ULNETCTL")/../ulnet-selftest/ulnet-selftest
A=127.214.0.1@tcp R1A=127.214.0.2@tcp R1B=127.214.1.2@tcp1 B=127.214.1.4@tcp1
R2B=127.214.1.3@tcp1 R2C=127.214.2.3@o2ib R2D=127.214.3.3@o2ib1 C=127.214.2.4@o2ib D=127.214.3.4@o2ib1

ni() # NID: one NI entry (o2ib over shm)
{
	local net=${1#*@}
	printf '    - net type: %s\n      local NI(s):\n        - nid: %s\n' "$net" "$1"
	[[ $net != o2ib* ]] || printf '          lnd tunables:\n              provider: shm\n              timeout: 5\n'
}
route() # NET GATEWAY [HOP]
{
	printf '    - net: %s\n      gateway: %s\n      hop: %s\n' "$1" "$2" "${3:--1}"
}
node() # NAME PAGE_SIZE ROUTING NIDS... -- ROUTES (NET:GW[:HOP])...
{
	local name=$1 ps=$2 rt=$3 x nets= routes=
	shift 3
	while (( $# )) && [[ $1 != -- ]]; do nets+=$(ni "$1")$'\n'; shift; done
	shift
	for x in "$@"; do
		IFS=: read -r n g h <<<"$x"
		routes+=$(route "$n" "$g" "$h")$'\n'
	done
	ul_start_node "$name" <<EOF
node:
    page_size: $ps
routing:
    enable: $rt
    alive_router_check_interval: 1
    router_ping_timeout: 2
net:
$nets
route:
$routes
EOF
}
node r1 4096 1 "$R1A" "$R1B" -- "o2ib:$R2B" "o2ib1:$R2B"
node r2 65536 1 "$R2B" "$R2C" "$R2D" -- "tcp:$R1B"
node a 4096 0 "$A" -- "tcp1:$R1A" "o2ib:$R1A:2" "o2ib1:$R1A:2"
node b 65536 0 "$B" -- "tcp:$R1B" "o2ib:$R2B" "o2ib1:$R2B"
node c 4096 0 "$C" -- "o2ib1:$R2C" "tcp1:$R2C" "tcp:$R2C:2"
node d 65536 0 "$D" -- "o2ib:$R2D" "tcp1:$R2D" "tcp:$R2D:2"

ul_step "every route is up once its gateway answered; A's routes to the o2ib nets are multi-hop"
for n in a b c d r1 r2; do
	deadline=$(( $(ul__now_ms) + 20000 ))
	until ul_ctl "$n" route show -v --json >"$UL_TMP/$n.json" &&
		"$UL_PYTHON" -c 'import json,sys; sys.exit(0 if all(r["state"] == "up" and r["checked_ago_ms"] >= 0 for r in json.load(open(sys.argv[1]))["route"]) else 1)' "$UL_TMP/$n.json"; do
		(( $(ul__now_ms) < deadline )) || ul_fail "$n: routes not all up: $(cat "$UL_TMP/$n.json")"
		sleep 0.1
	done
done
ul_json "$UL_TMP/a.json" "[r['type'] for r in j['route']] == ['single-hop', 'multi-hop', 'multi-hop']"

brw() # console from to op size offset
{
	ULNET_NODE=$(ul_sock "$1") timeout 60 "$SST" brw "$4" --from "$2" --to "$3" --size "$5" --offset "$6" \
		--concurrency 4 --duration 1 --check full --json >"$UL_TMP/r.json" ||
		{ cat "$UL_TMP/r.json" >&2; ul_fail "brw $4 $2 -> $3 size $5 offset $6"; }
	ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0 and j['bytes'] == j['rpcs'] * $5"
}
for pair in "a $A $B tcp->tcp1" "c $C $D o2ib->o2ib1" "a $A $D tcp->tcp1->o2ib1" "d $D $A o2ib1->tcp1->tcp"; do
	read -r console from to what <<<"$pair"
	ul_step "brw $what ($from -> $to)"
	for op in write read; do
		brw "$console" "$from" "$to" "$op" 1048576 4097
		brw "$console" "$from" "$to" "$op" 65537 1
	done
done

ul_step "a router short of buffers: messages wait for one (counted), nothing is dropped, nothing hangs"
ul_ctl r1 set large_buffers 1 >/dev/null
ul_ctl r1 set router_buffer_memory 1M >/dev/null
brw a "$A" "$B" write 1048576 4097
ul_ctl r1 routing show --json >"$UL_TMP/r1.rt.json"
ul_json "$UL_TMP/r1.rt.json" "j['routing'][0]['cpt[0]']['large']['waits'] > 0 and j['routing'][-1]['memory'] <= 1048576 + 8 * 4096"
ul_ctl r1 set large_buffers 1024 >/dev/null
ul_ctl r1 set router_buffer_memory 1G >/dev/null

ul_step "each router forwarded on every net it has, and dropped nothing"
for r in r1 r2; do
	ul_ctl "$r" routing show --json >"$UL_TMP/$r.rt.json"
	ul_json "$UL_TMP/$r.rt.json" "all(n['out']['msgs'] > 0 for n in j['routing'][-1]['net'] if not n['nid'].endswith('@lo')) and sum(j['routing'][-1]['forwarded']['drops'].values()) == 0"
done

ul_step "the router as a fault injector between two unmodified nodes: a corrupt rule on R1 is caught by B's check"
ul_ctl r1 fault corrupt add --dest "$B" --rate 1 --message REPLY >/dev/null
ULNET_NODE=$(ul_sock a) timeout 60 "$SST" brw write --from "$A" --to "$B" --size 65536 --concurrency 1 \
	--count 4 --check full --json >"$UL_TMP/c.json" || true
ul_json "$UL_TMP/c.json" "not j['ok'] and j['errors']['mismatch'] > 0"
ul_ctl r1 fault show --json >"$UL_TMP/f.json"
ul_json "$UL_TMP/f.json" "j['fault'][0]['kind'] == 'corrupt' and j['fault'][0]['corrupted'] > 0"
ul_ctl r1 fault corrupt del --all >/dev/null
brw a "$A" "$B" write 65536 0
ul_step "ok"
