#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shm fabric provider bandwidth for 1 MiB RDMA WRITE and READ (not part of the test suite), in one run:
#   - against memcpy over the same working set (bench/shm_rdma_bench.c; goal >= 0.8),
#   - against ucx_perftest over UCX's cma transport, put_bw and get with zcopy (goal >= 0.9),
# for memory from the provider's mem_alloc (memfd, mapped by the peer: RDMA is a memcpy) and for
# ordinary memory (process_vm_writev/readv, the only path before memfd registrations).
# ucx_perftest comes from Debian's ucx-utils, installed here on demand (benches do not run in CI).
# This VM is noisy: the measurements are interleaved over ROUNDS rounds (and, within the C program,
# in 0.2 s slices) and the medians compared; the median of the per-round ratios is printed too.
# Buffers are 2 MiB aligned with MADV_HUGEPAGE (memcpy's too; HUGE=0 turns it off).
# Usage: bench/shm_rdma_bench.sh [SECONDS]   (BUILD=build dir, default ./build; ROUNDS=5; WS_MIB=1:
#        the working set, 1 MiB like ucx_perftest's single buffer)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-2}
ROUNDS=${ROUNDS:-5}
WS_MIB=${WS_MIB:-1}
TMP=$(mktemp -d)
UCX_PIDS=()
cleanup() { for p in "${UCX_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

source "$SRC/bench/bench_lib.sh" # ucx_install, median
ucx_install
[ -f "$BUILD/build.ninja" ] || { echo "configure first: meson setup $BUILD" >&2; exit 1; }
grep -q ULNET_HAVE_FABRIC_SHM "$BUILD/src/util/config.h" || { echo "$BUILD was configured with -Dfabric_shm=disabled" >&2; exit 1; }
ninja -C "$BUILD" bench/shm_rdma_bench >/dev/null && cp "$BUILD/bench/shm_rdma_bench" "$TMP/shm_rdma_bench"

# ucx_perftest (UCT level, cma, zcopy, 1 MiB): prints the overall MB/s (MiB/s) of the Final line.
ucx() {
	local test=$1 port=$((20000 + RANDOM % 20000)) iters
	iters=$(awk -v s="$SECS" 'BEGIN { printf "%d", s * 2000 }')
	ucx_perftest -p "$port" >"$TMP/ucx-server.log" 2>&1 &
	UCX_PIDS+=($!)
	for _ in $(seq 50); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.1
	done
	ucx_perftest 127.0.0.1 -p "$port" -x cma -d memory -t "$test" -D zcopy -s 1048576 -n "$iters" >"$TMP/ucx.log" 2>&1 ||
		{ cat "$TMP/ucx.log" "$TMP/ucx-server.log" >&2; exit 1; }
	wait "${UCX_PIDS[-1]}" 2>/dev/null || true
	awk '/^Final:/ { print $7 }' "$TMP/ucx.log"
}

mc=() wr=() rd=() pw=() pr=() up=() ug=() rw=() rr=()
for r in $(seq "$ROUNDS"); do
	echo "round $r/$ROUNDS" >&2
	"$TMP/shm_rdma_bench" "$SECS" "$WS_MIB" >"$TMP/shm.txt"
	mc+=("$(awk '$1 == "memcpy" { print $2 }' "$TMP/shm.txt")")
	wr+=("$(awk '$1 == "write" { print $2 }' "$TMP/shm.txt")")
	rd+=("$(awk '$1 == "read" { print $2 }' "$TMP/shm.txt")")
	pw+=("$(awk '$1 == "write_pvm" { print $2 }' "$TMP/shm.txt")")
	pr+=("$(awk '$1 == "read_pvm" { print $2 }' "$TMP/shm.txt")")
	rw+=("$(awk '$1 == "memcpy" { m = $2 } $1 == "write" { w = $2 } END { printf "%.3f", w / m }' "$TMP/shm.txt")")
	rr+=("$(awk '$1 == "memcpy" { m = $2 } $1 == "read" { r = $2 } END { printf "%.3f", r / m }' "$TMP/shm.txt")")
	up+=("$(ucx put_bw)")
	ug+=("$(ucx get)")
done
M=$(median "${mc[@]}") W=$(median "${wr[@]}") R=$(median "${rd[@]}") UP=$(median "${up[@]}") UG=$(median "${ug[@]}")
PW=$(median "${pw[@]}") PR=$(median "${pr[@]}") RW=$(median "${rw[@]}") RR=$(median "${rr[@]}")
printf 'all rounds (MiB/s): memcpy %s | shm write %s | shm read %s | shm write pvm %s | shm read pvm %s | ucx cma put %s | ucx cma get %s\n' \
	"${mc[*]}" "${wr[*]}" "${rd[*]}" "${pw[*]}" "${pr[*]}" "${up[*]}" "${ug[*]}"
awk -v m="$M" -v w="$W" -v r="$R" -v pw="$PW" -v pr="$PR" -v up="$UP" -v ug="$UG" -v ws="$WS_MIB" -v rw="$RW" -v rr="$RR" 'BEGIN {
	printf "1 MiB transfers, working set %d MiB, medians in MiB/s\n", ws
	printf "  memcpy                     %9.0f\n", m
	printf "  shm RDMA WRITE (memfd)     %9.0f   vs memcpy %.2f (goal >= 0.8)   vs UCX cma put_bw %9.0f: %.2f (goal >= 0.9)\n", w, w / m, up, w / up
	printf "  shm RDMA READ  (memfd)     %9.0f   vs memcpy %.2f (goal >= 0.8)   vs UCX cma get    %9.0f: %.2f (goal >= 0.9)\n", r, r / m, ug, r / ug
	printf "  shm RDMA WRITE (process_vm)%9.0f   vs memcpy %.2f                 vs UCX cma put_bw %9.0f: %.2f\n", pw, pw / m, up, pw / up
	printf "  shm RDMA READ  (process_vm)%9.0f   vs memcpy %.2f                 vs UCX cma get    %9.0f: %.2f\n", pr, pr / m, ug, pr / ug
	printf "  median of the per-round ratios to memcpy (memfd): WRITE %.2f  READ %.2f\n", rw, rr
}'
