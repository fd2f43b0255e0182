#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The routing configuration and commands on one tcp node (127.46.0.1): a YAML `route:`, `routing:`
# and `buffers:` section shown by route show -v and routing show, export re-imported by a second node
# (127.46.0.2) with the same routes and settings, route add/del and the set keys at run time, and bad
# input (gateway off every local net, a local net, a missing route, bad options and numbers): one
# line on stderr and a non-zero exit. No gateway answers: the checker is off (interval 0), so the
# routes stay up as added.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=$UL_TMP
A1=$(ul_addr 46 1)
A2=$(ul_addr 46 2)
GW=$(ul_addr 46 9)
GW2=$(ul_addr 46 8)

# expect_err STATUS REGEX ARGS...: ulnetctl on n1 exits with STATUS, prints one stderr line matching REGEX
expect_err()
{
	local want=$1 re=$2
	shift 2
	ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" "$@"
	(( UL_STATUS == want )) || ul_fail "'$*': status $UL_STATUS, want $want; stderr: $(cat "$T/e")"
	ul_one_line "$T/e" "$re"
	[[ ! -s $T/o ]] || ul_fail "'$*' wrote to stdout: $(cat "$T/o")"
}

ul_step "start n1 with route:, routing: and buffers: sections"
ul_start_node n1 <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: $A1@tcp
          interfaces: {0: lo}
route:
    - net: o2ib1
      gateway: $GW@tcp
      hop: 2
      priority: 3
      health_sensitivity: 1
    - net: tcp5
      gateway: $GW2@tcp
routing:
    enable: 1
    alive_router_check_interval: 0
    router_ping_timeout: 7
buffers:
    tiny: 16
    small: 32
    large: 8
    memory_max: 16777216
global:
    router_sensitivity: 60
EOF

ul_step "route show, route show -v, filters"
ul_ctl n1 route show >"$T/route.out"
cat >"$T/route.want" <<EOF
route:
    - net: o2ib1
      gateway: $GW@tcp
    - net: tcp5
      gateway: $GW2@tcp
EOF
ul_diff "$T/route.want" "$T/route.out" "route show"
ul_ctl n1 route show -v --net o2ib1 >"$T/routev.out"
cat >"$T/routev.want" <<EOF
route:
    - net: o2ib1
      gateway: $GW@tcp
      hop: 2
      priority: 3
      health_sensitivity: 1
      state: up
      type: single-hop
      checked_ago_ms: -1
      send_count: 0
      send_length: 0
EOF
ul_diff "$T/routev.want" "$T/routev.out" "route show -v --net o2ib1"
ul_ctl n1 route show -v --json >"$T/route.json"
ul_json "$T/route.json" 'len(j["route"]) == 2 and j["route"][1] == {"net": "tcp5", "gateway": "'"$GW2"'@tcp", "hop": -1,
	"priority": 0, "health_sensitivity": 1, "state": "up", "type": "single-hop", "checked_ago_ms": -1,
	"send_count": 0, "send_length": 0}'
ul_ctl n1 route show --gateway "$GW2@tcp" --json >"$T/r.json"
ul_json "$T/r.json" 'j["route"] == [{"net": "tcp5", "gateway": "'"$GW2"'@tcp"}]'
ul_ctl n1 route show --hop 2 --json >"$T/r.json"
ul_json "$T/r.json" '[r["net"] for r in j["route"]] == ["o2ib1"]'
ul_ctl n1 route show --priority 0 --json >"$T/r.json"
ul_json "$T/r.json" '[r["net"] for r in j["route"]] == ["tcp5"]'
ul_ctl n1 route show --net tcp9 --json >"$T/r.json"
ul_json "$T/r.json" 'j["route"] == []'

ul_step "routing show: lnetctl's pools and enable, ulnet's settings and counters"
ul_ctl n1 routing show >"$T/routing.out"
grep -q '^    - cpt\[0\]:$' "$T/routing.out" || ul_fail "routing show: no cpt[0]: $(cat "$T/routing.out")"
grep -q '^    - enable: 1$' "$T/routing.out" || ul_fail "routing show: no enable: $(cat "$T/routing.out")"
ul_ctl n1 routing show --json >"$T/routing.json"
PAGE=$(getconf PAGESIZE)
ul_json "$T/routing.json" '(p := j["routing"][0]["cpt[0]"]) and p["tiny"]["nbuffers"] == 16 and p["small"]["nbuffers"] == 32 and p["large"]["nbuffers"] == 8'
ul_json "$T/routing.json" '(p := j["routing"][0]["cpt[0]"]["large"]) and p["size"] == 1048576 and p["npages"] == 1048576 // '"$PAGE"' and p["credits"] == 8 and p["mincredits"] == 8'
ul_json "$T/routing.json" '(p := j["routing"][0]["cpt[0]"]["small"]) and p["npages"] == (p["size"] + '"$PAGE"' - 1) // '"$PAGE"' and set(p) == {"npages", "nbuffers", "credits", "mincredits", "size", "allocated", "in_use", "waits"}'
ul_json "$T/routing.json" '(r := j["routing"][1]) and r["enable"] == 1 and r["memory_max"] == 16777216 and r["check_interval"] == 0 and r["ping_timeout"] == 7 and r["sensitivity"] == 60'
ul_json "$T/routing.json" '(r := j["routing"][1]) and r["forwarded"]["msgs"] == 0 and set(r["forwarded"]["drops"]) == {"disabled", "no_route", "loop", "too_big", "no_memory", "send_failed"}'
ul_json "$T/routing.json" '(n := j["routing"][1]["net"]) and [x["nid"] for x in n] == ["0@lo", "'"$A1"'@tcp"] and "drops" in n[1]["in"] and set(n[1]["out"]) == {"msgs", "bytes"}'

ul_step "stats show and peer show -v carry the forwarding counters"
ul_ctl n1 stats show --json >"$T/stats.json"
ul_json "$T/stats.json" '(f := j["statistics"]["forwarding"]) and f["msgs"] == 0 and "no_route" in f["drops"]'
ul_ctl n1 peer show -v --json >"$T/peer.json"
ul_json "$T/peer.json" 'isinstance(j["peer"], list)'

ul_step "export, and a second node started from it shows the same routes and settings"
ul_ctl n1 export >"$T/export.out"
grep -q "^route:$" "$T/export.out" || ul_fail "export: no route: section: $(cat "$T/export.out")"
sed -e "s|$A1@tcp|$A2@tcp|" -e "s|$(ul_sock n1)|$(ul_sock n2)|" "$T/export.out" >"$T/n2.yaml"
ul_start_node n2 <"$T/n2.yaml"
ul_ctl n2 export >"$T/export2.out"
ul_diff "$T/n2.yaml" "$T/export2.out" "n2 export"
ul_ctl n1 route show -v >"$T/rv1.out"
ul_ctl n2 route show -v >"$T/rv2.out"
ul_diff "$T/rv1.out" "$T/rv2.out" "n2 route show -v"
ul_ctl n2 routing show --json >"$T/routing2.json"
ul_json "$T/routing2.json" '(r := j["routing"][1]) and r["enable"] == 1 and r["memory_max"] == 16777216 and r["ping_timeout"] == 7 and r["sensitivity"] == 60 and j["routing"][0]["cpt[0]"]["small"]["nbuffers"] == 32'
ul_stop_node n2

ul_step "route add and del at run time"
ul_ctl n1 route add --net tcp7 --gateway "$GW@tcp" --hop 1 --priority 9 --health_sensitivity 2 || ul_fail "route add"
ul_ctl n1 route show -v --net tcp7 --json >"$T/r.json"
ul_json "$T/r.json" '(r := j["route"]) and len(r) == 1 and r[0]["hop"] == 1 and r[0]["priority"] == 9 and r[0]["health_sensitivity"] == 2 and r[0]["state"] == "up"'
ul_ctl n1 route add --net tcp7 --gateway "$GW2@tcp" || ul_fail "second gateway"
ul_ctl n1 route del --net tcp7 --gateway "$GW@tcp" || ul_fail "route del one gateway"
ul_ctl n1 route show --net tcp7 --json >"$T/r.json"
ul_json "$T/r.json" 'j["route"] == [{"net": "tcp7", "gateway": "'"$GW2"'@tcp"}]'
ul_ctl n1 route del --net tcp7 || ul_fail "route del every gateway"
ul_ctl n1 route show --net tcp7 --json >"$T/r.json"
ul_json "$T/r.json" 'j["route"] == []'

ul_step "set: lnetctl's keys and ulnet's, read back by routing show"
ul_ctl n1 set tiny_buffers 100
ul_ctl n1 set small_buffers 200
ul_ctl n1 set large_buffers 30
ul_ctl n1 set router_sensitivity 50
ul_ctl n1 set router_buffer_memory 32M
ul_ctl n1 set alive_router_check_interval 0
ul_ctl n1 set router_ping_timeout 9
ul_ctl n1 set routing 0
ul_ctl n1 routing show --json >"$T/routing.json"
ul_json "$T/routing.json" '(p := j["routing"][0]["cpt[0]"]) and [p[k]["nbuffers"] for k in ("tiny", "small", "large")] == [100, 200, 30]'
ul_json "$T/routing.json" '(r := j["routing"][1]) and (r["enable"], r["memory_max"], r["ping_timeout"], r["sensitivity"]) == (0, 33554432, 9, 50)'
ul_ctl n1 export --json >"$T/export.json"
ul_json "$T/export.json" 'j["routing"] == {"enable": 0, "alive_router_check_interval": 0, "router_ping_timeout": 9} and j["buffers"]["tiny"] == 100 and j["global"]["router_sensitivity"] == 50'
ul_ctl n1 set routing 1

ul_step "bad input: one line, non-zero exit"
expect_err 1 "^ulnetctl: route add: gateway 10\\.9\\.0\\.1@tcp5 is not on a local net$" route add --net o2ib3 --gateway 10.9.0.1@tcp5
expect_err 1 "^ulnetctl: route add: net tcp is local " route add --net tcp --gateway "$GW@tcp"
expect_err 1 "^ulnetctl: route add: gateway $A1@tcp is this node$" route add --net tcp9 --gateway "$A1@tcp"
expect_err 1 "^ulnetctl: route add: a route to o2ib1 via $GW@tcp exists already$" route add --net o2ib1 --gateway "$GW@tcp"
expect_err 1 "^ulnetctl: route del: no route to tcp8$" route del --net tcp8
expect_err 1 "^ulnetctl: route del: no route to o2ib1 via $GW2@tcp$" route del --net o2ib1 --gateway "$GW2@tcp"
expect_err 2 "^ulnetctl: route add: missing --net$" route add --gateway "$GW@tcp"
expect_err 2 "^ulnetctl: route add: missing --gateway$" route add --net o2ib1
expect_err 2 "^ulnetctl: route del: missing --net$" route del
expect_err 2 "^ulnetctl: route add: bad NID '1\\.2\\.3@tcp': " route add --net o2ib1 --gateway 1.2.3@tcp
expect_err 2 "^ulnetctl: route add: bad net 'tcpx1': " route add --net tcpx1 --gateway "$GW@tcp"
expect_err 2 "^ulnetctl: route add: bad --hop 0: " route add --net o2ib3 --gateway "$GW@tcp" --hop 0
expect_err 2 "^ulnetctl: route add: option '--hop' needs an integer, got 'x'$" route add --net o2ib3 --gateway "$GW@tcp" --hop x
expect_err 2 "^ulnetctl: route add: option '--priority' out of range " route add --net o2ib3 --gateway "$GW@tcp" --priority -1
expect_err 2 "^ulnetctl: route show: unknown option '--frob'$" route show --frob
expect_err 2 "^ulnetctl: set tiny_buffers: bad value 'lots': not a number$" set tiny_buffers lots
expect_err 2 "^ulnetctl: set router_sensitivity: 101 out of range \\[0, 100\\]$" set router_sensitivity 101
expect_err 2 "^ulnetctl: set routing: missing value$" set routing
expect_err 2 "^ulnetctl: set router_ping_timeout: 86401 out of range \\[1, 86400\\]$" set router_ping_timeout 86401
expect_err 2 "^ulnetctl: set router_buffer_memory: 4096 out of range " set router_buffer_memory 4096
expect_err 2 "^ulnetctl: unknown command 'route frob'" route frob

ul_step "help lists the commands"
ul_ctl n1 call help --json >"$T/help.json"
ul_json "$T/help.json" '{"route add", "route del", "route show", "routing show", "set routing", "set tiny_buffers", "set router_buffer_memory"} <= {c["name"] for c in j["commands"]}'
"$ULNETCTL" --help >"$T/help.out"
for c in "route add" "route del" "route show" "routing show" "set routing" "set large_buffers" "set router_ping_timeout"; do
	grep -q "^  $c " "$T/help.out" || ul_fail "ulnetctl --help: no '$c'"
done

ul_step "a file whose route the node refuses: one line with the file, the line and the route"
mkdir -p "$T/bad"
cat >"$T/bad/node.yaml" <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: $A2@tcp
route:
    - net: o2ib1
      gateway: 10.9.0.1@tcp5
EOF
ul_run "$T/bad/out" "$T/bad/err" timeout 10 "$ULNETD" -c "$T/bad/node.yaml" --control "$T/bad/ctl.sock"
(( UL_STATUS == 1 )) || ul_fail "bad route: status $UL_STATUS; stderr: $(cat "$T/bad/err")"
# the core logs its own reason first (as for an NI it refuses), then ulnetd names the file's line
grep -q "^ulnetd: error: CORE: route to o2ib1 via 10\\.9\\.0\\.1@tcp5: " "$T/bad/err" || ul_fail "no reason from the core: $(cat "$T/bad/err")"
tail -n 1 "$T/bad/err" >"$T/bad/last"
ul_one_line "$T/bad/last" "^ulnetd: $T/bad/node\\.yaml:6: cannot add route o2ib1 via 10\\.9\\.0\\.1@tcp5: No route to host$"
(( $(wc -l <"$T/bad/err") == 2 )) || ul_fail "bad route: more than two lines: $(cat "$T/bad/err")"
[[ ! -e $T/bad/ctl.sock ]] || ul_fail "bad route left a control socket"

ul_step "ok"
