#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetd under a service manager, 127.226.0.1 and 127.226.1.1: with NOTIFY_SOCKET set it sends READY=1
# once its NIs are up (the control socket answers by then), SIGHUP applies the -c file again as
# `ulnetctl import` does (RELOADING=1, then READY=1; a new net and route appear), a file it refuses
# leaves the node running and unchanged with one line naming the reason, and SIGTERM sends STOPPING=1.
# The notify socket is a python datagram listener standing in for systemd (PID 1 need not be systemd).
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp node listens on port 988"
ul_init
A=$(ul_addr 226 1) B=127.226.1.1
NOTES=$UL_TMP/notify.log
"$UL_PYTHON" - "$UL_TMP/notify.sock" "$NOTES" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode().replace("\n", " ") + "\n")
PY
LISTENER=$!
UL_ATEXIT+=("kill $LISTENER")
for _ in $(seq 100); do [[ -S $UL_TMP/notify.sock ]] && break; sleep 0.05; done
export NOTIFY_SOCKET=$UL_TMP/notify.sock

# count_of WORD: lines of the notify log holding WORD
count_of() { grep -c -- "$1" "$NOTES" 2>/dev/null || true; }
# wait_for WORD N: until WORD was sent N times
wait_for()
{
	for _ in $(seq 200); do
		(($(count_of "$1") >= $2)) && return 0
		sleep 0.05
	done
	ul_fail "no ${2}th $1 on the notify socket: $(cat "$NOTES" 2>/dev/null)"
}

ul_start_node n1 <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
YAML
wait_for READY=1 1
ul_step "READY=1 sent: $(head -1 "$NOTES")"

ul_step "SIGHUP applies the changed file: a new net and a route"
cat >>"$(ul_dir n1)/node.yaml" <<YAML
    - net type: tcp1
      local NI(s):
        - nid: $B@tcp1
route:
    - net: tcp9
      gateway: 127.226.1.9@tcp1
YAML
kill -HUP "$(ul_pid n1)"
wait_for RELOADING=1 1
wait_for READY=1 2
ul_ctl n1 net show --json >"$UL_TMP/net.json" || ul_fail "net show after the reload"
ul_json "$UL_TMP/net.json" 'any(n["net type"] == "tcp1" for n in j["net"])'
ul_ctl n1 route show --json >"$UL_TMP/route.json" || ul_fail "route show after the reload"
ul_json "$UL_TMP/route.json" 'j["route"][0]["net"] == "tcp9"'
grep -q "SIGHUP: .*node.yaml applied" "$(ul_log n1)" || ul_fail "no 'applied' line in the log"

ul_step "SIGHUP with a file the node refuses: one line, the node runs on unchanged"
cp "$(ul_dir n1)/node.yaml" "$UL_TMP/good.yaml"
sed -i 's/- net type: tcp1/- net type: tcp1\n      bogus: 1/' "$(ul_dir n1)/node.yaml"
kill -HUP "$(ul_pid n1)"
wait_for RELOADING=1 2
wait_for READY=1 3
grep -q "SIGHUP: .*node.yaml not applied: .*unknown key 'bogus'" "$(ul_log n1)" ||
	ul_fail "no 'not applied' line naming the key: $(tail -3 "$(ul_log n1)")"
ul_ctl n1 net show >/dev/null || ul_fail "the node stopped answering after a refused reload"

ul_step "SIGTERM: STOPPING=1 and exit status 0"
ul_stop_node n1
((UL_STATUS == 0)) || ul_fail "ulnetd exited with status $UL_STATUS"
wait_for STOPPING=1 1
ul_step "ok"
