#!/bin/bash
# SPDX-License-Identifier: MIT
# What an installed fault rule that matches nothing costs: 0-byte Put rate (bench/tcp_msgrate.c, two
# nodes in one process over tcp, put0 only) with no rule and with one such rule on both nodes
# (FAULT_NOMATCH=1), interleaved ROUNDS times in the same run; prints every run, the medians of the
# rate and of the CPU time per Put (what swings less when the cores are shared) and their ratios.
# Goal (issue 31): under 1 %. Not part of the tests.
# Usage: bench/fault_bench.sh [SECONDS]  (BUILD=build dir, default ./build; ROUNDS=5; BENCH_T=T uses
#        127.T.0.0/16, default 219; PEER_CREDITS=64; LOOPS=1)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-3}
ROUNDS=${ROUNDS:-5}
T=${BENCH_T:-219}
PC=${PEER_CREDITS:-64}
LOOPS=${LOOPS:-1}
ninja -C "$BUILD" bench/tcp_msgrate >/dev/null
bin=$BUILD/bench/tcp_msgrate
declare -a off on coff con
for r in $(seq "$ROUNDS"); do
	for mode in 0 1; do
		out=$(FAULT_NOMATCH=$mode "$bin" "127.$T.0.$((2 * r + 1))" "127.$T.0.$((2 * r + 2))" "$SECS" "$LOOPS" put0 "$PC" 0 2>/dev/null)
		rate=$(awk '$1 == "put0_rate" { print $2 }' <<<"$out")
		cpu=$(awk '$1 == "put0_cpu_us" { print $2 }' <<<"$out")
		[ -n "$rate" ] && [ -n "$cpu" ] || { echo "tcp_msgrate failed" >&2; exit 1; }
		if [ "$mode" = 0 ]; then off+=("$rate"); coff+=("$cpu"); else on+=("$rate"); con+=("$cpu"); fi
		echo "round $r: rule=$mode put0_rate=$rate put0_cpu_us=$cpu"
	done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${off[*]}" "${on[*]}" "${coff[*]}" "${con[*]}" <<'PY'
import statistics, sys
off, on, coff, con = ([float(x) for x in a.split()] for a in sys.argv[1:5])
mo, mn = statistics.median(off), statistics.median(on)
co, cn = statistics.median(coff), statistics.median(con)
print(f"rate: no rule {mo:.0f} msg/s, one rule matching nothing {mn:.0f} msg/s: ratio {mn / mo:.4f}")
print(f"CPU per Put: no rule {co:.3f} us, one rule {cn:.3f} us: ratio {cn / co:.4f}")
PY
