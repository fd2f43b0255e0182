#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetd under resource exhaustion and at shutdown:
#  - its control listener at EMFILE (RLIMIT_NOFILE lowered with prlimit while clients queue up) pauses
#    instead of spinning: under 5 % of a core over 2 s, a bounded number of log lines, and it serves
#    again once descriptors are back;
#  - SIGTERM ends it within a few seconds while a selftest run is in progress, and while a run toward
#    a NID that no local NI reaches is pending.
# Addresses: 127.231.0.{1,2}.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
T=$UL_TMP
command -v prlimit >/dev/null || { echo "SKIP: no prlimit (util-linux)" >&2; exit 77; }
sst_require_tcp 231

# cpu_ticks PID: utime + stime in clock ticks (/proc/PID/stat fields 14 and 15, after the comm field)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

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
hz=$(getconf CLK_TCK)
t0=$(cpu_ticks "$pid"); ms0=$(ul__now_ms)
sleep 2 # the measurement interval itself
t1=$(cpu_ticks "$pid"); ms1=$(ul__now_ms)
pct=$(( (t1 - t0) * 1000 * 100 / hz / (ms1 - ms0) ))
lines=$(grep -c "control: accept" "$(ul_log n0)" || true)
echo "EMFILE: $((t1 - t0)) ticks in $((ms1 - ms0)) ms = ${pct} % of a core, $lines accept lines" >&2
(( pct < 5 )) || ul_fail "ulnetd used ${pct} % of a core at EMFILE (want < 5 %)"
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

ul_step "SIGTERM while a run toward an unreachable NID is pending"
sst_node n3 231 3 4096
"$SST" --node "$(ul_sock n3)" --json brw write --from "$(ul_addr 231 3)@tcp" --to 10.255.255.1@o2ib \
	--duration 60 >"$T/u.json" 2>"$T/u.err" &
run=$!
deadline=$(( $(ul__now_ms) + 3000 ))
while ul__alive "$run" && (( $(ul__now_ms) < deadline )); do sleep 0.1; done
t0=$(ul__now_ms)
ul_stop_node n3 TERM 8
echo "n3 ended $(( $(ul__now_ms) - t0 )) ms after SIGTERM (status $UL_STATUS)" >&2
wait "$run" || true
echo PASS >&2
