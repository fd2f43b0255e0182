#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two ulnetd on 127.250.0.{2,3}@o2ib (shm provider, port 987, pages 4 KiB / 64 KiB): ping both ways
# over IMMEDIATE messages (sc_ping of tests/integration/scenarios.sh, which the VM lane runs on verbs); the nested `device: {...}` lnd tunables map is accepted and shows up
# flattened; `net show -v` (YAML and JSON) names the provider in force (n3 asks for none: auto picks
# shm on a host without RDMA devices) and the device limits in force (configured ones over the
# defaults); plain `net show` and `export` do not; provider verbs refuses to start (built: one line
# listing the RDMA devices, as no device serves 127.x; not built: the provider-selection error);
# without a provider the NI picks shm; a bad
# device limit refuses to start naming the key. Needs ptrace access between the two processes
# (docs/fabric.md: the node calls prctl(PR_SET_PTRACER) itself; Yama scope 2 or 3 refuses).
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP

start()
{
	local n=$1 ps=$2 provider=$3
	ul_start_node "n$n" <<YAML
node:
    page_size: $ps
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 250 "$n")@o2ib
          lnd tunables:
              ${provider}
              timeout: 10
              device: {max_send_sge: 2, max_qp_wr: 64}
YAML
}

ul_step "start two o2ib nodes (shm provider)"
start 2 4096 "provider: shm"
start 3 65536 "" # auto

ul_step "ping both ways (tests/integration/scenarios.sh: the VM lane runs the same on verbs)"
ul_scenarios o2ib n2="$(ul_addr 250 2)@o2ib" n3="$(ul_addr 250 3)@o2ib"
sc_ping n2 n3
sc_ping n3 n2

ul_step "device tunables are flattened"
ul_ctl n2 net show -v --json >"$T/net.json"
ul_json "$T/net.json" "str(j['net'][1]['local NI(s)'][0]['lnd tunables']['device.max_send_sge']) == '2'"

ul_step "net show -v names the provider and the device limits in force"
for n in 2 3; do
	ul_ctl "n$n" net show -v --json >"$T/net.json"
	ul_json "$T/net.json" "j['net'][0]['net type'] == 'lo' and 'fabric' not in j['net'][0]['local NI(s)'][0]"
	ul_json "$T/net.json" "j['net'][1]['local NI(s)'][0]['fabric'] == {'provider': 'shm', 'device': {
		'max_send_sge': 2, 'max_recv_sge': 30, 'max_qp_wr': 64, 'max_qp': 4096, 'max_mr': 16384,
		'max_mr_size': 4294967296, 'max_msg_sz': 65536, 'page_size': 4096, 'copy_thread': 0}}"
done
ul_ctl n3 net show -v >"$T/net.yaml"
grep -q '^ *provider: auto$' "$T/net.yaml" || ul_fail "no 'provider: auto' tunable: $(cat "$T/net.yaml")"
grep -A3 '^ *fabric:$' "$T/net.yaml" | grep -q '^ *provider: shm$' ||
	ul_fail "net show -v (YAML) does not name the provider: $(cat "$T/net.yaml")"
grep -q '^ *max_qp_wr: 64$' "$T/net.yaml" || ul_fail "net show -v (YAML) lacks max_qp_wr: $(cat "$T/net.yaml")"
ul_ctl n3 net show --json >"$T/net.json"
ul_json "$T/net.json" "'fabric' not in j['net'][1]['local NI(s)'][0]"
ul_ctl n3 export --json >"$T/net.json"
ul_json "$T/net.json" "'fabric' not in j['net'][1]['local NI(s)'][0]"

mkdir -p "$T/v"
cat >"$T/v/node.yaml" <<YAML
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 250 4)@o2ib
          lnd tunables:
              provider: verbs
YAML
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/v/node.yaml" --control "$T/v/ctl.sock"
(( UL_STATUS != 0 )) || ul_fail "ulnetd with provider verbs started on an address no RDMA device serves"
if grep -q ULNET_HAVE_FABRIC_VERBS "$BUILD/src/util/config.h"; then
	ul_step "provider verbs, no RDMA device serves the address: one line listing the devices, no node"
	grep -q "verbs: no RDMA device serves $(ul_addr 250 4) (.*); RDMA devices: " "$T/e" ||
		ul_fail "no device-listing error: $(cat "$T/e")"
	if [[ ! -d /sys/class/infiniband ]]; then
		grep -q 'RDMA devices: none' "$T/e" || ul_fail "devices listed on a host without any: $(cat "$T/e")"
	fi
else
	ul_step "provider verbs is not built: clear error, no node"
	grep -q 'verbs provider not built' "$T/e" || ul_fail "no provider-selection error: $(cat "$T/e")"
fi

ul_step "no provider named and no RDMA device serving the address: shm"
ul_start_node n4 -v <<YAML
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 250 4)@o2ib
YAML
grep -q "$(ul_addr 250 4)@o2ib: shm provider" "$(ul_log n4)" || ul_fail "auto did not pick shm: $(cat "$(ul_log n4)")"
ul_ctl n4 ping "$(ul_addr 250 2)@o2ib" --count 1 --timeout_ms 5000 >/dev/null || ul_fail "auto-selected shm node cannot ping"

ul_step "a bad device limit names the key"
cat >"$T/v/node.yaml" <<YAML
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 250 4)@o2ib
          lnd tunables:
              provider: shm
              device: {max_send_sge: 0}
YAML
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/v/node.yaml" --control "$T/v/ctl.sock"
(( UL_STATUS != 0 )) || ul_fail "ulnetd with max_send_sge 0 started"
grep -q 'max_send_sge' "$T/e" || ul_fail "the error does not name max_send_sge: $(cat "$T/e")"

ul_step "PASS"
