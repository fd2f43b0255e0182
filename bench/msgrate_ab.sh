#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two trees' 0-byte Put rate side by side in one run (not part of the test suite): bench/tcp_msgrate
# of this tree and of BEFORE_BUILD (another tree's build dir, e.g. main's, to price a change on the
# hot path such as the metrics of docs/metrics.md), one run of each in turn, ROUNDS rounds, for
# peer_credits 8 (the default) and 64. Prints every run, then per configuration the medians of the
# rate and of the CPU time per Put, and after/before ratios: only same-run ratios compare (the
# machine's load moves the rate by a third between runs; the CPU per Put moves less).
# Usage: BEFORE_BUILD=/tmp/base/b bench/msgrate_ab.sh [SECONDS]
#        (ROUNDS=5; BUILD=this tree's build dir; LOOPS=1; BENCH_T=215: nodes on 127.T.1.1 and .2)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
BEFORE_BUILD=${BEFORE_BUILD:?set BEFORE_BUILD to the other tree\'s build dir}
SECS=${1:-3}
ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-1}
T=${BENCH_T:-215}
A=127.$T.1.1 B=127.$T.1.2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for t in "$BEFORE_BUILD" "$BUILD"; do
	ninja -C "$t" bench/tcp_msgrate >/dev/null
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
declare -A v
run() { # tree-name build-dir peer_credits
	"$2/bench/tcp_msgrate" "$A" "$B" "$SECS" "$LOOPS" put0 "$3" >"$TMP/out.txt" 2>"$TMP/err.txt" ||
		{ cat "$TMP/err.txt" >&2; exit 1; }
	local rate cpu
	rate=$(awk '$1 == "put0_rate" { print $2 }' "$TMP/out.txt")
	cpu=$(awk '$1 == "put0_cpu_us" { print $2 }' "$TMP/out.txt")
	printf '%-6s peer_credits %-2s put0_rate %10s  put0_cpu_us %s\n' "$1" "$3" "$rate" "$cpu"
	v[$1.$3.rate]+="$rate "
	v[$1.$3.cpu]+="$cpu "
}
for r in $(seq "$ROUNDS"); do
	for pc in 8 64; do
		run before "$BEFORE_BUILD" "$pc"
		run after "$BUILD" "$pc"
	done
done
for pc in 8 64; do
	# shellcheck disable=SC2086
	rb=$(median ${v[before.$pc.rate]}) ra=$(median ${v[after.$pc.rate]})
	# shellcheck disable=SC2086
	cb=$(median ${v[before.$pc.cpu]}) ca=$(median ${v[after.$pc.cpu]})
	awk -v pc="$pc" -v rb="$rb" -v ra="$ra" -v cb="$cb" -v ca="$ca" 'BEGIN {
		printf "peer_credits %s: rate before %.0f after %.0f (after/before %.3f); cpu_us/Put before %s after %s (after/before %.3f)\n",
			pc, rb, ra, ra / rb, cb, ca, ca / cb }'
done
