#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 13 "remote crash": one raw socklnd peer sends 150,000 ping GETs on one connection and never
# reads. The node must bound what it queues for that peer (peer_queue_msgs: the rest are refused with
# -ENOBUFS and counted), answer another node during the flood and after the flooding connection timed
# out, and keep its peak RSS (VmHWM, printed) under 64 MiB.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 210 1) B=$(ul_addr 210 2) F=$(ul_addr 210 9)
N=${FLOOD_GETS:-150000}
# AddressSanitizer keeps up to 256 MiB of freed memory in quarantine, which RSS would count: keep it
# small so the bound still says something about the node's own memory (pings get 10 s: a sanitized
# node under the flood is slow to answer, not absent)
if grep -qa __asan_init "$ULNETD"; then export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"; fi
ul_start_node a <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
          lnd tunables:
              timeout: 3
EOF
ul_start_node b <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: $B@tcp
EOF

stat_of() { # NAME KEY: one counter of `stats show`
	ul_ctl "$1" stats show --json >"$UL_TMP/stats.json" || ul_fail "stats show on $1"
	"$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["statistics"][sys.argv[2]])' \
		"$UL_TMP/stats.json" "$2"
}
wait_for() { # SECONDS WHAT CMD...: poll CMD until it succeeds
	local end=$((SECONDS + $1)) what=$2
	shift 2
	until "$@"; do
		(( SECONDS < end )) || ul_fail "timed out waiting for: $what"
		ul__alive "$(ul_pid a)" || ul_fail "node a died while waiting for: $what"
		sleep 0.2
	done
}
refused_over() { (( $(stat_of a tx_queue_full) > $1 )); }
flood_queue_empty() {
	ul_ctl a peer show --nid "$F@tcp" -v --json >"$UL_TMP/fp.json" || return 1
	"$UL_PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1]))
sys.exit(0 if j["peer"][0]["peer ni"][0]["tx_q_num_of_buf"] == 0 else 1)' "$UL_TMP/fp.json"
}

ul_step "flood: $N ping GETs from $F on one connection that never reads"
"$UL_PYTHON" "$SRC/tests/integration/flood_gets.py" "$A" "$F" "$N" >"$UL_TMP/flood.out" 2>&1 &
flood=$!
UL_ATEXIT+=("kill $flood 2>/dev/null || true")
wait_for 60 "the flooding peer's queue to fill" refused_over 0
ul_step "during the flood: b pings a"
ul_ctl b ping "$A@tcp" --timeout_ms 10000 >/dev/null || ul_fail "ping during the flood"
wait_for 120 "all $N GETs sent" grep -q "^sent $N" "$UL_TMP/flood.out"
ul_step "the flooding connection times out; its queue is failed (iteratively)"
wait_for 60 "the flooding peer's queue to empty" flood_queue_empty
ul_step "after the flood: b pings a"
ul_ctl b ping "$A@tcp" --timeout_ms 10000 >/dev/null || ul_fail "ping after the flood"
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$(ul_pid a)/status")
refused=$(stat_of a tx_queue_full)
ul_step "peak RSS of node a: $((hwm / 1024)) MiB ($hwm kB); $refused replies refused (queue full)"
(( hwm < 64 * 1024 )) || ul_fail "peak RSS $hwm kB >= 64 MiB"
(( refused > 0 )) || ul_fail "no reply refused: the queue bound did not act"
grep -q "transmit queue full" "$(ul_log a)" || ul_fail "no 'transmit queue full' line in a's log"
ul_step "ok"
