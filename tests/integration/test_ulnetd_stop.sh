#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetd under resource exhaustion and at shutdown:
#  - its control listener at EMFILE (RLIMIT_NOFILE lowered with prlimit while clients queue up) pauses
#    instead of spinning (all its threads are seen asleep while clients wait in the backlog), logs a
#    bounded number of lines, and serves again once descriptors are back;
#  - SIGTERM ends it cleanly (status 0) while a selftest run is in progress, and after a run toward a
#    NID that no local NI reaches has failed (peer_gone). The stop bounds only guard against hangs.
# Addresses: 127.231.0.{1,2}.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=$UL_TMP
command -v prlimit >/dev/null || { echo "SKIP: no prlimit (util-linux)" >&2; exit 77; }
sst_require_tcp 231

ul_step "control listener at EMFILE"
ul_start_node n0 <<YAML
net:
    - net type: lo
YAML
pid=$(ul_pid n0)
nfd=$(ls "/proc/$pid/fd" | wc -l)
soft=$(prlimit --pid "$pid" --nofile --noheadings --output SOFT)
prlimit --pid "$pid" --nofile="$nfd:" # the soft limit only, so it can be raised again
# Clients that connect and wait: the kernel queues them, every accept fails with EMFILE.
"$UL_PYTHON" - "$(ul_sock n0)" "$T/clients.ready" <<'PY' &
import socket, sys, time
socks = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    socks.append(s)
open(sys.argv[2], "w").close()
time.sleep(60)  # hold the connections until the test kills us
PY
holder=$!
deadline=$(( $(ul__now_ms) + 10000 ))
until [[ -e $T/clients.ready ]] && grep -q "control: accept: Too many open files" "$(ul_log n0)"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "no EMFILE line from the control listener: $(tail -n 3 "$(ul_log n0)")"
	sleep 0.05
done
# The outcome, not a CPU share over a timed window: with 8 clients waiting in the backlog the listener
# is readable, so a loop that polled it would never sleep; paused, every thread of ulnetd is asleep.
ul_wait_asleep "$pid" "ulnetd with its control listener at EMFILE"
grep -q "pausing the listener" "$(ul_log n0)" || ul_fail "the EMFILE line does not say the listener pauses"
lines=$(grep -c "control: accept" "$(ul_log n0)" || true)
(( lines <= 12 )) || ul_fail "$lines 'control: accept' lines at EMFILE (rate limit: 10 per 5 s + summary)"
prlimit --pid "$pid" --nofile="$soft:"
kill "$holder"; wait "$holder" 2>/dev/null || true
ul_ctl n0 net show >/dev/null || ul_fail "no service after the descriptors came back"

ul_step "SIGTERM during a selftest run"
sst_two_nodes 231
"$SST" --node "$(ul_sock n1)" --json brw write --from "$N1" --to "$N2" --size 64k --concurrency 8 \
	--duration 60 >"$T/run.json" 2>"$T/run.err" &
run=$!
ul_wait_stat n2 recv_length $(( 4 << 20 )) # in progress: data is flowing to n2
t0=$(ul__now_ms)
ul_stop_node n1 TERM 8
echo "n1 ended $(( $(ul__now_ms) - t0 )) ms after SIGTERM with a run in progress (status $UL_STATUS)" >&2
# a clean shutdown (status 0): the run noticed the daemon stopping, the 5 s watchdog did not fire
(( UL_STATUS == 0 )) || ul_fail "n1 exited with status $UL_STATUS after SIGTERM during a run (watchdog?)"
wait "$run" || true
ul_stop_node n2 TERM 8
(( UL_STATUS == 0 )) || ul_fail "n2 (no command running) exited with status $UL_STATUS after SIGTERM"

ul_step "a run toward a NID no local NI reaches fails at once; SIGTERM then ends the node cleanly"
sst_node n3 231 3 4096
"$SST" --node "$(ul_sock n3)" --json brw write --from "$(ul_addr 231 3)@tcp" --to 10.255.255.1@o2ib \
	--duration 60 >"$T/u.json" 2>"$T/u.err" &
run=$!
deadline=$(( $(ul__now_ms) + 30000 )) # only against a hang: the run asks for 60 s
while ul__alive "$run" && (( $(ul__now_ms) < deadline )); do sleep 0.05; done
ul__alive "$run" && ul_fail "the run toward an unreachable NID is still going after 30 s"
wait "$run" || true
ul_json "$T/u.json" "not j['ok'] and j['errors']['peer_gone'] == 1 and j['rpcs'] == 0"
ul_stop_node n3 TERM 8
(( UL_STATUS == 0 )) || ul_fail "n3 exited with status $UL_STATUS after SIGTERM"
echo PASS >&2
