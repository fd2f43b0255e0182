#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One lo-only ulnetd: ping 0@lo through ulnetctl, every show command's --json, export against the
# expected YAML and re-imported by a second node, error lines for bad input and unreachable nodes,
# and a clean SIGTERM/SIGINT shutdown. Needs no addresses (lo only).
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP

ul_step "start n1 (lo only, pid 12345, page_size 65536)"
ul_start_node n1 <<EOF
# lo-only node
node:
    pid: 12345
    page_size: 65536
net:
    - net type: lo
global:
    discovery: 1
EOF
[[ $(stat -c %a "$(ul_sock n1)") == 600 ]] || ul_fail "control socket mode is $(stat -c %a "$(ul_sock n1)"), want 600"

ul_step "ping 0@lo"
ul_ctl n1 ping 0@lo >"$T/ping.out" 2>"$T/ping.err" || ul_fail "ping 0@lo failed: $(cat "$T/ping.err")"
[[ ! -s $T/ping.err ]] || ul_fail "ping wrote to stderr: $(cat "$T/ping.err")"
grep -q '^ping:$' "$T/ping.out" || ul_fail "no 'ping:' header: $(cat "$T/ping.out")"
grep -q '^    - primary nid: 0@lo$' "$T/ping.out" || ul_fail "no primary nid: $(cat "$T/ping.out")"
grep -q '^      Multi-Rail: ' "$T/ping.out" || ul_fail "no Multi-Rail: $(cat "$T/ping.out")"
grep -Eq '^      time \(ms\): [0-9]+\.[0-9]{3}$' "$T/ping.out" || ul_fail "no time: $(cat "$T/ping.out")"
grep -q '^      peer ni:$' "$T/ping.out" || ul_fail "no peer ni list: $(cat "$T/ping.out")"
grep -q '^        - nid: 0@lo$' "$T/ping.out" || ul_fail "0@lo not in the NID list: $(cat "$T/ping.out")"

ul_step "ping --count 3, with PID, --json"
ul_ctl n1 ping 0@lo --count 3 >"$T/ping3.out" || ul_fail "ping --count 3 failed"
[[ $(grep -c 'primary nid' "$T/ping3.out") == 3 ]] || ul_fail "want 3 replies: $(cat "$T/ping3.out")"
ul_ctl n1 ping 12345-0@lo >/dev/null || ul_fail "ping 12345-0@lo failed"
ul_ctl n1 ping 0@lo --count 2 --timeout_ms 2000 --json >"$T/ping.json" || ul_fail "ping --json failed"
ul_json "$T/ping.json" 'len(j["ping"]) == 2 and j["ping"][0]["peer ni"][0]["nid"] == "0@lo"'
ul_json "$T/ping.json" 'isinstance(j["ping"][1]["time (ms)"], float) and j["ping"][0]["primary nid"] == "0@lo"'

ul_step "ping NID... (lnetctl's list): every NID in turn, --count each; a bad one fails before any ping"
ul_ctl n1 ping 0@lo 12345-0@lo --count 2 --json >"$T/pingl.json" || ul_fail "ping of two NIDs failed"
ul_json "$T/pingl.json" 'len(j["ping"]) == 4'
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" ping 0@lo 10.99.0.2@tcp --timeout_ms 500 --json
(( UL_STATUS == 1 )) || ul_fail "ping of a list with an unreachable NID: status $UL_STATUS"
ul_one_line "$T/e" '^ulnetctl: ping 10\.99\.0\.2@tcp: '
ul_json "$T/o" 'len(j["ping"]) == 1 and j["ping"][0]["primary nid"] == "0@lo"'
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" ping 0@lo 1.2.3.4@tcpx
(( UL_STATUS == 2 )) || ul_fail "a list with a bad NID: status $UL_STATUS"
[[ ! -s $T/o ]] || ul_fail "a list with a bad NID pinged: $(cat "$T/o")"

ul_step "show commands, YAML and --json"
ul_ctl n1 net show >"$T/net.out"
cat >"$T/net.want" <<'EOF'
net:
    - net type: lo
      local NI(s):
        - nid: 0@lo
          status: up
EOF
ul_diff "$T/net.want" "$T/net.out" "net show"
ul_ctl n1 net show --json >"$T/net.json"
ul_json "$T/net.json" 'j["net"][0]["net type"] == "lo" and j["net"][0]["local NI(s)"][0]["nid"] == "0@lo"'
ul_ctl n1 net show -v --json >"$T/netv.json"
ul_json "$T/netv.json" '"send_count" in j["net"][0]["local NI(s)"][0]["statistics"]'
ul_json "$T/netv.json" '"credits" in j["net"][0]["local NI(s)"][0]["tunables"]'
ul_ctl n1 net show -v >"$T/netv.out"
grep -q '^          statistics:$' "$T/netv.out" || ul_fail "net show -v: no statistics: $(cat "$T/netv.out")"
ul_ctl n1 net show --net tcp --json >"$T/nettcp.json"
ul_json "$T/nettcp.json" 'j["net"] == []'
ul_ctl n1 stats show >"$T/stats.out"
grep -q '^statistics:$' "$T/stats.out" || ul_fail "stats show: $(cat "$T/stats.out")"
for k in msgs_alloc msgs_max errors send_count recv_count drop_count send_length drop_length; do
	grep -Eq "^    $k: [0-9]+$" "$T/stats.out" || ul_fail "stats show: no $k: $(cat "$T/stats.out")"
done
ul_ctl n1 stats show --json >"$T/stats.json"
ul_json "$T/stats.json" 'j["statistics"]["send_count"] >= 6 and j["statistics"]["recv_count"] >= 6'
ul_ctl n1 peer show --json >"$T/peer.json"
ul_json "$T/peer.json" 'isinstance(j["peer"], list)'
ul_ctl n1 peer show -v >/dev/null || ul_fail "peer show -v"
ul_ctl n1 export --json >"$T/export.json"
ul_json "$T/export.json" 'j["node"]["page_size"] == 65536 and j["net"][0]["net type"] == "lo"'
ul_ctl n1 call help --json >"$T/help.json"
ul_json "$T/help.json" '"ping" in [c["name"] for c in j["commands"]]'

ul_step "export matches the expected YAML"
ul_ctl n1 export >"$T/export.out"
cat >"$T/export.want" <<EOF
node:
    pid: 12345
    page_size: 65536
    transaction_timeout: 50
    max_peers: 16384
    busy_poll_us: 0
    large_max: 67108864
    loops: ${ULNET_LOOPS:-1}
    control: $(ul_sock n1)
net:
    - net type: lo
      local NI(s):
        - nid: 0@lo
          status: up
          tunables:
              peer_timeout: 0
              peer_credits: 0
              peer_buffer_credits: 0
              credits: 0
          lnd tunables:
          CPT: "[0]"
routing:
    enable: 0
    alive_router_check_interval: 60
    router_ping_timeout: 50
buffers:
    tiny: 2048
    small: 16384
    large: 1024
    memory_max: 1073741824
global:
    router_sensitivity: 100
selftest:
    server_rpc_timeout_ms: 64000
    kernel_stats: False
EOF
ul_diff "$T/export.want" "$T/export.out" "export"

ul_step "export re-imported by n2 gives the same export"
ul_start_node n2 <"$T/export.out"
ul_ctl n2 export >"$T/export2.out"
sed "s|$(ul_sock n1)|$(ul_sock n2)|" "$T/export.out" >"$T/export2.want"
ul_diff "$T/export2.want" "$T/export2.out" "n2 export"

ul_step "errors: one line on stderr, non-zero exit"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" ping 1.2.3.4@tcpx
(( UL_STATUS == 2 )) || ul_fail "bad NID: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: bad NID '1\.2\.3\.4@tcpx': "
[[ ! -s $T/o ]] || ul_fail "bad NID wrote to stdout"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" ping 127.0.0.300@tcp
(( UL_STATUS == 2 )) || ul_fail "bad NID address: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: bad NID"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" ping 10.99.0.1@tcp --timeout_ms 500
(( UL_STATUS != 0 )) || ul_fail "ping of an unreachable NID succeeded"
ul_one_line "$T/e" '^ulnetctl: ping 10\.99\.0\.1@tcp: '
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" frobnicate
(( UL_STATUS == 2 )) || ul_fail "bad command: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: unknown command 'frobnicate'"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" net show --bogus
(( UL_STATUS == 2 )) || ul_fail "bad option: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: net show: unknown option '--bogus'"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" call net frob
(( UL_STATUS == 2 )) || ul_fail "call net frob: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: unknown command 'net frob'"
ul_run "$T/o" "$T/e" "$ULNETCTL" net show
(( UL_STATUS == 2 )) || ul_fail "no --node: status $UL_STATUS"
ul_one_line "$T/e" '^ulnetctl: no node given'
ULNET_NODE=$(ul_sock n1) "$ULNETCTL" net show >/dev/null || ul_fail "ULNET_NODE not used"
# into a file, not a pipe: grep -q leaves at its first match and a long help would die of SIGPIPE
"$ULNETCTL" --help >"$T/help.txt" || ul_fail "--help: status $?"
grep -q '^usage: ulnetctl' "$T/help.txt" || ul_fail "--help"

ul_step "unreachable node"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$T/nonexistent.sock" net show
(( UL_STATUS == 1 )) || ul_fail "missing socket: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: cannot reach node at $T/nonexistent.sock: No such file or directory$"
# a socket file nobody listens on (a crashed daemon's leftover)
"$UL_PYTHON" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/stale.sock"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$T/stale.sock" ping 0@lo
(( UL_STATUS == 1 )) || ul_fail "stale socket: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetctl: cannot reach node at $T/stale.sock: Connection refused$"

ul_step "a second ulnetd on a live socket is refused; a stale socket is replaced"
mkdir -p "$T/dup"
printf 'net: []\n' >"$T/dup/node.yaml"
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/dup/node.yaml" --control "$(ul_sock n1)"
(( UL_STATUS == 1 )) || ul_fail "second ulnetd on n1's socket: status $UL_STATUS"
ul_one_line "$T/e" 'another ulnetd is serving it'
ul_ctl n1 net show >/dev/null || ul_fail "n1 lost its socket to the second ulnetd"
mkdir -p "$(ul_dir n3)"
"$UL_PYTHON" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$(ul_sock n3)"
ul_start_node n3 <<EOF
net:
EOF
ul_ctl n3 ping 0@lo >/dev/null || ul_fail "n3 on the replaced stale socket"

ul_step "a stuck client blocks neither other clients nor shutdown"
# half a request, then silence: its connection thread waits in read(). The client prints its socket's
# inode; ulnetd has accepted the connection (and started the thread that reads it) once ss shows
# ulnetd owning the other end (peer = that inode).
"$UL_PYTHON" -c 'import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b"net sh")
print(os.fstat(s.fileno()).st_ino, flush=True); time.sleep(60)' "$(ul_sock n1)" >"$T/stuck.ino" &
stuck=$!
deadline=$(( $(ul__now_ms) + 10000 )) # only against a hang
until [[ -s $T/stuck.ino ]] &&
	ss -xpn | awk -v ino="$(cat "$T/stuck.ino")" -v pid="pid=$(ul_pid n1)," '$8 == ino && index($0, pid) { f = 1 } END { exit !f }'; do
	(( $(ul__now_ms) < deadline )) || ul_fail "ulnetd did not accept the stuck client: $(ss -xpn | grep -F "$(ul_sock n1)")"
	sleep 0.05
done
ul_ctl n1 ping 0@lo --count 2 >/dev/null || ul_fail "ping while another client is stuck"

ul_step "SIGTERM / SIGINT: exit 0, socket removed"
# the outcome, not a time: n1 exits 0 while the stuck client still holds its connection (ul_stop_node's
# 10 s bound only guards against a hang)
ul_stop_node n1 TERM
(( UL_STATUS == 0 )) || ul_fail "n1 exit status $UL_STATUS after SIGTERM"
ul__alive "$stuck" || ul_fail "the stuck client was gone before n1 stopped: shutdown was not tested with it"
kill "$stuck" 2>/dev/null || true
wait "$stuck" 2>/dev/null || true
[[ ! -e $(ul_sock n1) ]] || ul_fail "n1 left its socket behind"
ul_stop_node n2 INT
(( UL_STATUS == 0 )) || ul_fail "n2 exit status $UL_STATUS after SIGINT"
[[ ! -e $(ul_sock n2) ]] || ul_fail "n2 left its socket behind"
ul_stop_node n3 TERM
(( UL_STATUS == 0 )) || ul_fail "n3 exit status $UL_STATUS after SIGTERM"
[[ ! -e $(ul_sock n3) ]] || ul_fail "n3 left its socket behind"
ul_run "$T/o" "$T/e" "$ULNETCTL" --node "$(ul_sock n1)" net show
(( UL_STATUS == 1 )) || ul_fail "stopped node still answers"
ul_one_line "$T/e" '^ulnetctl: cannot reach node at .*: No such file or directory$'

ul_step "PASS"
