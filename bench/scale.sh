#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Four node pairs at once over tcp on loopback, with 1 and with 2 loop threads per node, in one run
# (not part of the test suite; root, for port 988):
#   1. 0-byte Put rate: four bench/tcp_msgrate processes at the same time (each two nodes, its own
#      address pair, 64 Puts in flight, peer_credits 64), their rates summed, and the node locks'
#      hold time and futex waits per Put (ulnet_stats);
#   2. 1 MiB brw write: four ulnetd pairs, one ulnet-selftest brw per pair at the same time
#      (--check none, concurrency 4), their MB/s summed, and the eight nodes' lock hold time and futex
#      waits per message (stats show -v: lock_hold_total_ns, lock_sleeps over send + recv counts), and
#      the waits to enter a loop (owner_sleeps; a tree without it prints 0).
# Each configuration once per round, interleaved; medians over ROUNDS. Only ratios of the same run
# compare. Usage: bench/scale.sh [SECONDS]   (BUILD=build dir; ROUNDS=3; BENCH_T=39: 127.T.0.0/16)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-5}
ROUNDS=${ROUNDS:-3}
PAIRS=4
source "$SRC/tests/integration/lib.sh"
ul_init
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
T=${BENCH_T:-39}
ninja -C "$BUILD" bench/tcp_msgrate tools/ulnetd/ulnetd tools/ulnet-selftest/ulnet-selftest >/dev/null
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
declare -A v

put_round() { # LOOPS
	local p pids=()
	for p in $(seq "$PAIRS"); do
		"$BUILD/bench/tcp_msgrate" "$(ul_addr "$T" $((2 * p - 1)))" "$(ul_addr "$T" $((2 * p)))" "$SECS" "$1" put0 64 \
			>"$UL_TMP/put.$p.txt" 2>"$UL_TMP/put.$p.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || ul_fail "tcp_msgrate failed: $(cat "$UL_TMP"/put.*.err)"; done
	v[put.$1]+="$(cat "$UL_TMP"/put.*.txt | awk '$1 == "put0_rate" { s += $2 } END { print s }') "
	v[puthold.$1]+="$(cat "$UL_TMP"/put.*.txt | awk '$1 == "put0_lock_hold_ns" { s += $2; n++ } END { printf "%.0f", s / n }') "
	v[putsleep.$1]+="$(cat "$UL_TMP"/put.*.txt | awk '$1 == "put0_lock_sleeps" { s += $2; n++ } END { printf "%.4f", s / n }') "
	v[putown.$1]+="$(cat "$UL_TMP"/put.*.txt | awk '$1 == "put0_owner_sleeps" { s += $2 } END { printf "%.4f", s / '"$PAIRS"' }') "
}

node_yaml() { # LOOPS N
	printf 'node:\n    loops: %s\nnet:\n    - net type: tcp\n      local NI(s):\n        - nid: %s@tcp\n' "$1" "$(ul_addr "$T" "$2")"
}
# lock hold ns, futex waits and owner waits per message, summed over the eight nodes:
# "hold sleeps msgs owner_sleeps"
lock_totals() {
	local n
	for n in $(seq $((2 * PAIRS))); do
		ul_ctl "n$n" stats show -v --json
	done | "$UL_PYTHON" -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read(); i = 0; h = s = m = w = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    o, i = dec.raw_decode(text, i); st = o["statistics"]
    h += st["lock_hold_total_ns"]; s += st["lock_sleeps"]; m += st["send_count"] + st["recv_count"]
    w += st.get("owner_sleeps", 0)
print(h, s, m, w)'
}
brw_round() { # LOOPS
	local p n pids=() t0 t1
	for n in $(seq $((2 * PAIRS))); do
		ul_start_node "n$n" < <(node_yaml "$1" "$n")
	done
	for p in $(seq "$PAIRS"); do
		ul_ctl "n$((2 * p - 1))" ping "$(ul_addr "$T" $((2 * p)))@tcp" --timeout_ms 5000 >/dev/null || ul_fail "warm-up ping failed"
	done
	read -r -a t0 <<<"$(lock_totals)"
	for p in $(seq "$PAIRS"); do
		"$SST" --node "$(ul_sock "n$((2 * p - 1))")" --json brw write --from "$(ul_addr "$T" $((2 * p - 1)))@tcp" \
			--to "$(ul_addr "$T" $((2 * p)))@tcp" --size 1M --concurrency 4 --check none --duration "$SECS" \
			>"$UL_TMP/brw.$p.json" 2>"$UL_TMP/brw.$p.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || ul_fail "brw failed: $(cat "$UL_TMP"/brw.*.err)"; done
	read -r -a t1 <<<"$(lock_totals)"
	v[brw.$1]+="$("$UL_PYTHON" -c 'import json,sys; print(sum(json.load(open(f))["MBps"] for f in sys.argv[1:]))' "$UL_TMP"/brw.*.json) "
	v[brwhold.$1]+="$(awk -v h="$((t1[0] - t0[0]))" -v m="$((t1[2] - t0[2]))" 'BEGIN { printf "%.0f", h / m }') "
	v[brwsleep.$1]+="$(awk -v s="$((t1[1] - t0[1]))" -v m="$((t1[2] - t0[2]))" 'BEGIN { printf "%.4f", s / m }') "
	v[brwown.$1]+="$(awk -v s="$((t1[3] - t0[3]))" -v m="$((t1[2] - t0[2]))" 'BEGIN { printf "%.4f", s / m }') "
	for n in $(seq $((2 * PAIRS))); do ul_stop_node "n$n"; done
}

for r in $(seq "$ROUNDS"); do
	for loops in 1 2; do
		ul_step "round $r/$ROUNDS: $PAIRS pairs at once, $loops loop(s) per node: 0-byte Put rate, ${SECS} s"
		put_round "$loops"
		ul_step "round $r/$ROUNDS: $PAIRS pairs at once, $loops loop(s) per node: 1 MiB brw write, ${SECS} s"
		brw_round "$loops"
	done
done
echo "tree $(git -C "$SRC" log -1 --format=%h 2>/dev/null || echo '?'); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in put puthold putsleep putown brw brwhold brwsleep brwown; do
	printf '  %-9s 1 loop: %s| 2 loops: %s\n' "$k" "${v[$k.1]}" "${v[$k.2]}"
done
row() { # label key
	local a b
	a=$(median ${v[$2.1]}) b=$(median ${v[$2.2]})
	awk -v l="$1" -v a="$a" -v b="$b" 'BEGIN { printf "  %-40s 1 loop %12.4g   2 loops %12.4g   2/1 %.3f\n", l, a, b, (a ? b / a : 0) }'
}
echo "medians, $PAIRS pairs at once"
row "0-byte Put rate (Puts/s, summed)" put
row "  node lock held per Put (ns)" puthold
row "  futex waits per Put" putsleep
row "  waits to enter a loop per Put" putown
row "1 MiB brw write (MB/s, summed)" brw
row "  node lock held per message (ns)" brwhold
row "  futex waits per message" brwsleep
row "  waits to enter a loop per message" brwown
