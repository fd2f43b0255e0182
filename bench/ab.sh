#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two trees' shm data path side by side, in one run (not part of the test suite): this tree and
# BEFORE (another checkout, e.g. `git worktree add /tmp/before <commit>`, built in BEFORE/build).
#   1. the provider's raw 1 MiB RDMA WRITE and READ against memcpy (bench/shm_rdma_bench.c), mapped
#      memory and process_vm, each tree's run right after the other's, ROUNDS rounds;
#   2. 1 MiB brw Put and Get over o2ib on shm between 4 KiB-page nodes, and brw / raw WRITE
#      (bench/o2ib_bench.sh, one round per tree, alternating, OROUNDS times).
# Prints every run and the medians; only same-run ratios compare (the machine changes).
# Usage: BEFORE=/tmp/before bench/ab.sh [SECONDS]   (ROUNDS=5, OROUNDS=3; BUILD=this tree's build dir)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
BEFORE=${BEFORE:?set BEFORE to the other tree (built in BEFORE/build)}
SECS=${1:-2}
ROUNDS=${ROUNDS:-5}
OROUNDS=${OROUNDS:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for t in "$BEFORE/build" "$BUILD"; do
	ninja -C "$t" >/dev/null
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
declare -A v
raw() { # tree-name build-dir
	"$2/bench/shm_rdma_bench" "$SECS" 1 >"$TMP/raw.txt"
	for k in memcpy write read write_pvm read_pvm; do
		v[$1.$k]+="$(awk -v k="$k" '$1 == k { print $2 }' "$TMP/raw.txt") "
	done
	v[$1.rw]+="$(awk '$1 == "memcpy" { m = $2 } $1 == "write" { w = $2 } END { printf "%.3f", w / m }' "$TMP/raw.txt") "
	v[$1.rr]+="$(awk '$1 == "memcpy" { m = $2 } $1 == "read" { r = $2 } END { printf "%.3f", r / m }' "$TMP/raw.txt") "
}
for r in $(seq "$ROUNDS"); do
	echo "raw round $r/$ROUNDS" >&2
	raw before "$BEFORE/build"
	raw after "$BUILD"
done
brw() { # tree-name tree build-dir
	SRC="$2" BUILD="$3" ROUNDS=1 bash "$2/bench/o2ib_bench.sh" "$SECS" >"$TMP/o2ib.txt" 2>"$TMP/o2ib.err" ||
		{ cat "$TMP/o2ib.err" >&2; exit 1; }
	v[$1.put]+="$(awk '/^  Put 4K-4K/ { print $3 }' "$TMP/o2ib.txt") "
	v[$1.get]+="$(awk '/^  Get 4K-4K/ { print $3 }' "$TMP/o2ib.txt") "
	v[$1.putraw]+="$(sed -n 's/.*brw Put 4K-4K \/ raw WRITE ([a-z]*, the memory brw moves) \([0-9.]*\).*/\1/p' "$TMP/o2ib.txt") "
	v[$1.getraw]+="$(sed -n 's/.*(goal >= 0.9)   Get \([0-9.]*\).*/\1/p' "$TMP/o2ib.txt") "
}
for r in $(seq "$OROUNDS"); do
	echo "brw round $r/$OROUNDS" >&2
	brw before "$BEFORE" "$BEFORE/build"
	brw after "$SRC" "$BUILD"
done
echo "before: $BEFORE ($(git -C "$BEFORE" log -1 --format=%h)); after: $SRC ($(git -C "$SRC" log -1 --format=%h)); load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in memcpy write read write_pvm read_pvm rw rr put get putraw getraw; do
	printf '  %-9s before: %s| after: %s\n' "$k" "${v[before.$k]}" "${v[after.$k]}"
done
row() { # label key
	local b a
	b=$(median ${v[before.$2]}) a=$(median ${v[after.$2]})
	awk -v l="$1" -v b="$b" -v a="$a" 'BEGIN { printf "  %-44s before %9.2f   after %9.2f   after/before %.3f\n", l, b, a, a / b }'
}
echo "medians (MiB/s, MB/s for brw; ratios as printed by the benches)"
row "memcpy 1 MiB" memcpy
row "shm RDMA WRITE 1 MiB (mapped)" write
row "shm RDMA READ 1 MiB (mapped)" read
row "shm RDMA WRITE 1 MiB (process_vm)" write_pvm
row "shm RDMA READ 1 MiB (process_vm)" read_pvm
row "WRITE / memcpy (per-round ratio)" rw
row "READ / memcpy (per-round ratio)" rr
row "brw Put 4K-4K over o2ib/shm" put
row "brw Get 4K-4K over o2ib/shm" get
row "brw Put / raw WRITE" putraw
row "brw Get / raw WRITE" getraw
