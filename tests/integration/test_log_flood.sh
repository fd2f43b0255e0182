#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A hostile peer opens 10,000 connections to a tcp NI and sends garbage instead of a hello. The node
# logs a bounded number of lines: each call site prints its burst (10) per interval (5 s), and reports
# the rest as "suppressed N similar lines". The node keeps serving: another node pings it during and
# after the flood. Addresses: 127.230.0.{1,2} nodes, 127.230.0.3 the hostile peer.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=$UL_TMP
N=10000

for n in 1 2; do
	ul_start_node "n$n" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 230 "$n")@tcp
          lnd tunables:
              accept: all
YAML
done
victim=$(ul_addr 230 1)
log=$(ul_log n1)

# garbage.py ADDR COUNT: COUNT connections from 127.230.0.3, each sending 128 bytes without the
# socklnd hello magic, then closing. Prints the number made.
cat >"$T/garbage.py" <<'PY'
import socket, sys
addr, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    s = socket.socket()
    s.bind(("127.230.0.3", 0))
    s.connect((addr, 988))
    s.sendall(b"\xde\xad\xbe\xef" * 32)
    s.close()
print(n)
PY
# idle.py ADDR COUNT: COUNT connections from 127.230.0.3 that send nothing (they stay in the
# handshake), held a moment, then closed: past the node's handshake limit this logs from that site.
cat >"$T/idle.py" <<'PY'
import socket, sys, time
addr, n = sys.argv[1], int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket()
    s.bind(("127.230.0.3", 0))
    s.connect((addr, 988))
    socks.append(s)
time.sleep(0.3)
for s in socks:
    s.close()
PY

ul_step "flood $victim:988 with $N bad connections while n2 pings it"
start=$(ul__now_ms)
"$UL_PYTHON" "$T/garbage.py" "$victim" "$N" >"$T/flood.out" &
flood=$!
pings=0
while ul__alive "$flood"; do
	ul_ctl n2 ping "$victim@tcp" --timeout_ms 5000 >/dev/null || ul_fail "ping during the flood failed"
	pings=$((pings + 1))
	sleep 0.1 # pacing, so the pings do not starve the flood of CPU
done
wait "$flood" || ul_fail "the flood client failed"
[[ $(cat "$T/flood.out") == "$N" ]] || ul_fail "flood made $(cat "$T/flood.out") connections, want $N"
(( pings > 0 )) || ul_fail "no ping completed during the flood"

ul_step "the suppressed count is reported once the rate window is over"
# A site reports what it suppressed with its next line after its interval: poke it until it does.
# Under load the last window may hold most of the flood: wait until the reports cover half of it.
# Two sites take the flood: the bad hello, and (when the node reads hellos slower than they come)
# the handshake limit, which drops the oldest of the 64 from this host. A garbage connection pokes
# the first; 70 idle ones, once per interval, poke the second.
reported() { grep -o "suppressed [0-9]* similar" "$log" | awk '{s += $2} END {print s + 0}'; }
deadline=$(( $(ul__now_ms) + 30000 ))
idle_poke=0
until grep -q "error: TCP: suppressed [0-9]* similar lines" "$log" && (( $(reported) >= N / 2 )); do
	(( $(ul__now_ms) < deadline )) ||
		ul_fail "$(reported) lines reported as 'suppressed N similar lines' for $N bad connections: $(tail -n 5 "$log")"
	"$UL_PYTHON" "$T/garbage.py" "$victim" 1 >/dev/null
	if grep -q "too many connections in the handshake" "$log" && (( $(ul__now_ms) - idle_poke > 5500 )); then
		"$UL_PYTHON" "$T/idle.py" "$victim" 70
		idle_poke=$(ul__now_ms)
	fi
	sleep 0.2 # pacing of the pokes, not synchronisation: the loop waits on the log line
done
secs=$(( ($(ul__now_ms) - start) / 1000 + 1 ))
lines=$(wc -l <"$log")
suppressed=$(reported)
# at most 4 call sites x (10 lines + 1 summary) per 5 s window, plus one window of slack
allowed=$(( 4 * 11 * (secs / 5 + 2) ))
echo "flood: $N connections in ${secs}s, $pings pings answered meanwhile, $lines log lines" \
	"(allowed $allowed), $suppressed lines suppressed" >&2
(( lines <= allowed )) || ul_fail "$lines log lines for $N bad connections (allowed $allowed): $(sort "$log" | uniq -c | sort -rn | head -n 5)"
(( suppressed >= N / 2 )) || ul_fail "only $suppressed lines reported as suppressed for $N bad connections"

ul_step "the node still serves after the flood"
ul_ctl n2 ping "$victim@tcp" --count 2 --timeout_ms 5000 >/dev/null || ul_fail "ping after the flood failed"
ul_ctl n1 ping "$(ul_addr 230 2)@tcp" --timeout_ms 5000 >/dev/null || ul_fail "the flooded node cannot ping out"
echo "PASS" >&2
