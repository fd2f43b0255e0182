#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# o2ib LND benchmark on the shm provider, in one run (not part of the test suite):
#   1. 1 MiB Put and Get bandwidth (ulnet-selftest brw read: the server PUTs; brw write: the server
#      GETs) between a 4 KiB-page and a 64 KiB-page node, and between two 4 KiB-page nodes; prints
#      mixed/same (goal >= 0.98);
#   2. that brw bandwidth against the provider's raw 1 MiB RDMA WRITE bandwidth between two
#      processes (bench/shm_rdma_bench.c) with as many in flight (CONC) over the same working set:
#      brw with --check none sends every 1 MiB from one shared source into one shared sink on each
#      node (docs/selftest.md), so the raw WRITEs go from 1 MiB into 1 MiB (WS=N: N MiB each side),
#      for the memory brw moves (ulnet_mem_alloc: the shm provider's memfd) (goal >= 0.9); the raw
#      figure for ordinary memory (process_vm) is printed too.
# The measurements are interleaved over ROUNDS rounds, each brw figure between two raw ones, and the
# medians compared (this VM is noisy: run it when `uptime` is low; the load is printed). Each figure
# also gets its CPU ms per GiB (brw: both nodes, every thread, busy polling included; raw: the
# writer's process), which the load hardly moves: the ratios of those are the trustworthy ones on a
# shared machine. COPY_THREAD=1 gives the nodes (lnd tunable device.copy_thread) and the raw bench
# alike the shm provider's copy thread (src/fabric/shm/shm_engine.c).
# Usage: bench/o2ib_bench.sh [SECONDS]   (BUILD=build dir, default ./build; ROUNDS=5; CONC=8 RPCs in
#        flight, and WRs in flight for the raw figure; WS=1; COPY_THREAD=0). Nodes on 127.140.0.{1,2,3}@o2ib.
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-2}
ROUNDS=${ROUNDS:-5}
CONC=${CONC:-8}
WS=${WS:-1}
COPY_THREAD=${COPY_THREAD:-0}
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
grep -q ULNET_HAVE_FABRIC_SHM "$BUILD/src/util/config.h" || ul_fail "$BUILD was configured with -Dfabric_shm=disabled"
ninja -C "$BUILD" bench/shm_rdma_bench >/dev/null && cp "$BUILD/bench/shm_rdma_bench" "$UL_TMP/shm_rdma_bench"

# n1: 4 KiB pages; n2: 64 KiB pages; n3: 4 KiB pages. The raw baseline polls its completion queue
# without sleeping, as RDMA benchmarks do; the nodes poll for BUSY_POLL_US (default 100; 0: they sleep
# between messages, and every message to a sleeping node costs its sender a wake-up in the kernel,
# about 30 us an RPC on this VM: two wake-ups).
UL_BUSY_POLL_US=${BUSY_POLL_US:-100}
ul_o2ib_node n1 140 1 4096 10 "device: {copy_thread: $COPY_THREAD}"
ul_o2ib_node n2 140 2 65536 10 "device: {copy_thread: $COPY_THREAD}"
ul_o2ib_node n3 140 3 4096 10 "device: {copy_thread: $COPY_THREAD}"
nid() { echo "$(ul_addr 140 "$1")@o2ib"; }
mbps() { "$UL_PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ok"], j; print(j["MBps"])' "$1"; }
# CPU ms (user + system, every thread) ulnetd NAME has used so far
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$(ul_pid "$1")/stat"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# brw DIR FROM TO: MB/s of SECS seconds of 1 MiB brw, CONC in flight; the CPU ms per GiB both nodes
# used meanwhile goes to cpu_ARRAY (a cost the load of this shared machine hardly moves)
brw() {
	local c0 c1
	c0=$(( $(cpu_ms "n$2") + $(cpu_ms "n$3") ))
	"$SST" --node "$(ul_sock "n$2")" --json brw "$1" --from "$(nid "$2")" --to "$(nid "$3")" --size 1M --check none \
		--concurrency "$CONC" --duration "$SECS" >"$UL_TMP/brw.json" 2>"$UL_TMP/brw.err" ||
		ul_fail "brw $1 n$2 -> n$3: $(cat "$UL_TMP/brw.json" "$UL_TMP/brw.err")"
	c1=$(( $(cpu_ms "n$2") + $(cpu_ms "n$3") ))
	"$UL_PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.1f" % ((int(sys.argv[2]) - int(sys.argv[3])) / (j["bytes"] / 2**30)))' \
		"$UL_TMP/brw.json" "$c1" "$c0" >"$UL_TMP/brw.cpu"
	mbps "$UL_TMP/brw.json"
}

# raw: the provider's 1 MiB RDMA WRITE between two processes, CONC in flight over WS MiB on each
# side, as brw keeps them; MiB/s -> MB/s, as ulnet-selftest prints
raw() {
	"$UL_TMP/shm_rdma_bench" "$SECS" "$WS" "$CONC" "$COPY_THREAD" >"$UL_TMP/raw.txt"
	raw_mfd+=("$(awk '$1 == "write" { printf "%.1f", $2 * 1.048576 }' "$UL_TMP/raw.txt")")
	raw_pvm+=("$(awk '$1 == "write_pvm" { printf "%.1f", $2 * 1.048576 }' "$UL_TMP/raw.txt")")
	cpu_raw+=("$(awk '$1 == "write" { print $3 }' "$UL_TMP/raw.txt")")
}

# Per round: raw, Put (same, mixed), raw, Get (same, mixed), raw: each brw figure is compared with the
# raw ones taken just before and after it, so a change of load between them (this VM is shared) moves
# both sides of a ratio alike; mixed and same are taken back to back.
put_same=() get_same=() put_mixed=() get_mixed=() raw_mfd=() raw_pvm=()
cpu_put_same=() cpu_get_same=() cpu_put_mixed=() cpu_get_mixed=() cpu_raw=()
for r in $(seq "$ROUNDS"); do
	ul_step "round $r/$ROUNDS: raw RDMA WRITE, brw read 4K<->4K and 4K<->64K, raw, brw write, raw (${SECS} s each; load $(cut -d' ' -f1 /proc/loadavg))"
	raw
	put_same+=("$(brw read 1 3)") && cpu_put_same+=("$(cat "$UL_TMP/brw.cpu")")
	put_mixed+=("$(brw read 1 2)") && cpu_put_mixed+=("$(cat "$UL_TMP/brw.cpu")")
	raw
	get_same+=("$(brw write 1 3)") && cpu_get_same+=("$(cat "$UL_TMP/brw.cpu")")
	get_mixed+=("$(brw write 1 2)") && cpu_get_mixed+=("$(cat "$UL_TMP/brw.cpu")")
	raw
done
# what each 1 MiB transfer cost on the wire, as the LND counts it (n2 and n3 PUT to n1 in brw read,
# n1 REPLYs to them in brw write): the same WRs and SGEs whatever the page sizes; registrations count
# both sides (a sink's key lives for one transfer), the cache the source side (one per selftest
# buffer: ulnet_mem_alloc memory)
for n in 1 2 3; do
	ul_ctl "n$n" peer show -v --json >"$UL_TMP/peer.json"
	"$UL_PYTHON" - "$UL_TMP/peer.json" "n$n" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["peer"]:
    for ni in p["peer ni"]:
        b = [b for b in ni.get("rdma", {}).get("buckets", []) if b["max_bytes"] == 1048576]
        if b and b[0]["transfers"]:
            b = b[0]
            r = ni["rdma"]
            print(f"{sys.argv[2]} -> {ni['nid']}: 1 MiB transfers {b['transfers']}, WRs/transfer {b['wrs_per_transfer']}, "
                  f"SGEs/WR {b['sges_per_wr']}, bounces {b['bounces']}, registrations {b['registrations']}; "
                  f"source registration cache: {r['reg_cache_hits']} hits, {r['reg_cache_misses']} misses, "
                  f"{r['reg_cache_evictions']} evictions")
PY
done
echo "runs (MB/s): put 4K-4K ${put_same[*]} | put 4K-64K ${put_mixed[*]} | get 4K-4K ${get_same[*]} |" \
	"get 4K-64K ${get_mixed[*]} | raw write memfd ${raw_mfd[*]} | raw write process_vm ${raw_pvm[*]}"
echo "CPU ms per GiB (both nodes; raw: the writer, the target only waits): put 4K-4K ${cpu_put_same[*]} |" \
	"put 4K-64K ${cpu_put_mixed[*]} | get 4K-4K ${cpu_get_same[*]} | get 4K-64K ${cpu_get_mixed[*]} | raw write memfd ${cpu_raw[*]}"
# what the o2ib data path moved through: the provider's counters are per process; the LND's
# registrations tell which memory it was
"$UL_PYTHON" - "${BRW_MEM:-memfd}" "$CONC" "$WS" "${put_same[*]}" "${put_mixed[*]}" "${get_same[*]}" "${get_mixed[*]}" \
	"${raw_mfd[*]}" "${raw_pvm[*]}" "$(cut -d' ' -f1-3 /proc/loadavg)" "$UL_BUSY_POLL_US" \
	"${cpu_put_same[*]}" "${cpu_put_mixed[*]}" "${cpu_get_same[*]}" "${cpu_get_mixed[*]}" "${cpu_raw[*]}" \
	"$COPY_THREAD" <<'PY'
import statistics, sys
kind, conc, ws = sys.argv[1], sys.argv[2], sys.argv[3]
ps, pm, gs, gm, rm, rp = [list(map(float, a.split())) for a in sys.argv[4:10]]
cps, cpm, cgs, cgm, cr = [list(map(float, a.split())) for a in sys.argv[12:17]]
med = statistics.median
raw = rm if kind == "memfd" else rp
other = rp if kind == "memfd" else rm
# raw[3r], raw[3r+1], raw[3r+2] bracket round r's Put (first two) and Get (last two)
def vs_raw(brw, first, base):
    return [b / ((base[3 * r + first] + base[3 * r + first + 1]) / 2) for r, b in enumerate(brw)]
print("1 MiB over o2ib (shm provider), medians in MB/s")
print(f"  Put 4K-4K  {med(ps):9.1f}   Put 4K-64K {med(pm):9.1f}   mixed/same {med(pm) / med(ps):.3f} (goal >= 0.98)")
print(f"  Get 4K-4K  {med(gs):9.1f}   Get 4K-64K {med(gm):9.1f}   mixed/same {med(gm) / med(gs):.3f} (goal >= 0.98)")
print(f"  raw RDMA WRITE 1 MiB, {conc} in flight, working set {ws} MiB: memfd memory {med(rm):9.1f}   "
      f"ordinary memory (process_vm) {med(rp):9.1f}")
print(f"  brw Put 4K-4K / raw WRITE ({kind}, the memory brw moves) {med(ps) / med(raw):.2f} (goal >= 0.9)   "
      f"Get {med(gs) / med(raw):.2f}   (vs the other kind: {med(ps) / med(other):.2f})")
print(f"  median of per-round ratios (raw: the runs before and after): Put mixed/same "
      f"{med(m / s for m, s in zip(pm, ps)):.3f}   Get mixed/same {med(m / s for m, s in zip(gm, gs)):.3f}   "
      f"brw Put/raw {med(vs_raw(ps, 0, raw)):.2f}   brw Get/raw {med(vs_raw(gs, 1, raw)):.2f}")
print(f"  CPU ms per GiB (medians; brw: both nodes, raw: the writer): Put 4K-4K {med(cps):.1f}  4K-64K {med(cpm):.1f}   "
      f"Get 4K-4K {med(cgs):.1f}  4K-64K {med(cgm):.1f}   raw WRITE {med(cr):.1f}")
print(f"  by CPU (cost ratios, higher is better): same/mixed Put {med(cps) / med(cpm):.3f}  Get {med(cgs) / med(cgm):.3f}   "
      f"raw/brw Put {med(cr) / med(cps):.2f}  Get {med(cr) / med(cgs):.2f}")
print(f"  shm copy thread {'on' if sys.argv[17] == '1' else 'off'} (COPY_THREAD); nodes' busy_poll_us {sys.argv[11]}; load average at the end (1, 5, 15 min): {sys.argv[10]}")
PY
