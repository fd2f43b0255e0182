#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Routed 1 MiB brw against direct, in one run (not part of the test suite; needs root: tcp port 988).
# Three ulnetd on loopback (issue 30):
#   C  127.T.0.1@tcp              route: o2ib via R's tcp NID
#   R  127.T.0.2@tcp, @o2ib (shm) routing enabled: the router
#   S  127.T.0.3@o2ib (shm)       route: tcp via R's o2ib NID
# and, in each round, 1 MiB ulnet-selftest brw write and read (--check none, CONC in flight):
#   routed      C -> S through R (tcp hop, then o2ib hop);
#   direct tcp  C -> R, the routed path's first hop, alone;
#   direct o2ib R -> S, its second hop, alone.
# Why those baselines: a store-and-forward path can go no faster than its slowest hop, and these are
# the same processes, the same LNDs and the same per-hop work, without the router in the middle. A C
# with both NIs talking to S over o2ib would measure o2ib against tcp-then-o2ib, not routing. The
# ratio printed is routed / the slower direct hop, per round, median (goal >= 0.8).
# Measured too: the router's CPU time (utime + stime of the whole process, /proc/PID/stat) per GiB it
# forwarded (its stats' route_length), beside its CPU per GiB as the endpoint of each direct hop, and
# each node's CPU per GiB moved (the machine has 2 CPUs: the routed path's third busy process is
# what a CPU-bound ratio follows); and
# router buffer memory (routing show: memory_max_seen, the high-water mark of its pools) with the
# router at page_size 4096 and then 65536, each phase a fresh set of nodes under the same load (goal:
# equal: buffers are sized in bytes).
# Every figure is the median of ROUNDS interleaved rounds (each round: direct tcp, routed, direct
# o2ib, for write then read; this VM is shared and noisy), every run printed; never a timed test.
# Usage: bench/routed_bench.sh [SECONDS]   (BUILD=build dir, default ./build; SECONDS per run, default
#        1; ROUNDS=3; CONC=8 RPCs in flight; BENCH_T=141: nodes on 127.T.0.{1,2,3};
#        BUSY_POLL_US: every node's busy_poll_us, default the node's own)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-1}
ROUNDS=${ROUNDS:-3}
CONC=${CONC:-8}
T=${BENCH_T:-141}
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
grep -q ULNET_HAVE_FABRIC_SHM "$BUILD/src/util/config.h" || ul_fail "$BUILD was configured with -Dfabric_shm=disabled"
[[ $(id -u) == 0 ]] || ul_fail "run as root (tcp NIs listen on port 988)"

C_TCP=$(ul_addr "$T" 1)@tcp R_TCP=$(ul_addr "$T" 2)@tcp R_O2IB=$(ul_addr "$T" 2)@o2ib S_O2IB=$(ul_addr "$T" 3)@o2ib
NODEOPT=
[[ -z ${BUSY_POLL_US:-} ]] || NODEOPT=$'\n'"    busy_poll_us: $BUSY_POLL_US"

# start_nodes ROUTER_PAGE_SIZE: a fresh C, R and S (R first: C and S check their gateway as they
# start, and a route whose gateway refused it stays down until the checker's next round, 60 s)
start_nodes()
{
	ul_start_node r <<YAML
node:
    page_size: $1$NODEOPT
net:
    - net type: tcp
      local NI(s):
        - nid: $R_TCP
    - net type: o2ib
      local NI(s):
        - nid: $R_O2IB
          lnd tunables:
              provider: shm
routing:
    enable: 1
YAML
	ul_start_node s <<YAML
node:
    page_size: 4096$NODEOPT
net:
    - net type: o2ib
      local NI(s):
        - nid: $S_O2IB
          lnd tunables:
              provider: shm
route:
    - net: tcp
      gateway: $R_O2IB
YAML
	ul_start_node c <<YAML
node:
    page_size: 4096$NODEOPT
net:
    - net type: tcp
      local NI(s):
        - nid: $C_TCP
route:
    - net: o2ib
      gateway: $R_TCP
YAML
	ul_ctl c ping "$S_O2IB" --count 3 --timeout_ms 5000 >/dev/null || ul_fail "C cannot ping S through R"
	ul_ctl s ping "$C_TCP" --count 3 --timeout_ms 5000 >/dev/null || ul_fail "S cannot ping C through R"
}
stop_nodes() { ul_stop_node c; ul_stop_node s; ul_stop_node r; }

# CPU ms (user + system, every thread) ulnetd NAME has used so far
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$(ul_pid "$1")/stat"; }
# per_gib MS BYTES: MS per GiB of BYTES
per_gib() { awk -v ms="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f", ms / (b / 2^30); else print "nan" }'; }

# run PAGE_SIZE DIR KIND CONSOLE FROM TO: SECS seconds of 1 MiB brw DIR; one line into $UL_TMP/runs:
# the router's page size, DIR, KIND, MB/s, R's CPU ms per GiB (per GiB R forwarded when it routed,
# else per GiB the brw moved: R is one end of that direct hop), then C's, R's and S's CPU ms per GiB
# the brw moved
run()
{
	local c0 r0 s0 f0 c1 r1 s1 f1 bytes mbps fwd
	c0=$(cpu_ms c) r0=$(cpu_ms r) s0=$(cpu_ms s)
	f0=$(ul_stat r route_length)
	timeout 60 "$SST" --node "$(ul_sock "$4")" --json brw "$2" --from "$5" --to "$6" --size 1M --check none \
		--concurrency "$CONC" --duration "$SECS" >"$UL_TMP/brw.json" 2>"$UL_TMP/brw.err" ||
		ul_fail "brw $2 $5 -> $6: $(cat "$UL_TMP/brw.json" "$UL_TMP/brw.err")"
	c1=$(cpu_ms c) r1=$(cpu_ms r) s1=$(cpu_ms s)
	f1=$(ul_stat r route_length)
	read -r bytes mbps < <("$UL_PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["bytes"], j["MBps"]) if j["ok"] else 0' "$UL_TMP/brw.json") || true
	[[ -n ${mbps:-} ]] || ul_fail "brw $2 $5 -> $6 not ok: $(cat "$UL_TMP/brw.json")"
	fwd=$(( f1 - f0 ))
	((fwd > 0)) || fwd=$bytes
	echo "$1 $2 $3 $mbps $(per_gib $((r1 - r0)) "$fwd") $(per_gib $((c1 - c0)) "$bytes")" \
		"$(per_gib $((r1 - r0)) "$bytes") $(per_gib $((s1 - s0)) "$bytes")" >>"$UL_TMP/runs"
}

# the first value of KEY anywhere in routing show's JSON (its layout is ulnetctl's), or "n/a"
routing_value()
{
	ul_ctl r routing show --json >"$UL_TMP/routing.json" 2>"$UL_TMP/routing.err" || { echo n/a; return; }
	"$UL_PYTHON" - "$UL_TMP/routing.json" "$1" <<'PY'
import json, sys
def find(o, k):
    if isinstance(o, dict):
        if k in o:
            return o[k]
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = find(v, k)
            if r is not None:
                return r
    return None
v = find(json.load(open(sys.argv[1])), sys.argv[2])
print("n/a" if v is None else v)
PY
}

# phase PAGE_SIZE: ROUNDS rounds against a fresh set of nodes whose router has that page size
phase()
{
	local ps=$1 r dir
	start_nodes "$ps"
	# one routed run each way first, not counted: connections, registrations and router buffers made
	SECS=1 run "$ps" write warm c "$C_TCP" "$S_O2IB"
	SECS=1 run "$ps" read warm c "$C_TCP" "$S_O2IB"
	for r in $(seq "$ROUNDS"); do
		for dir in write read; do
			ul_step "router page_size $ps, round $r/$ROUNDS: brw $dir direct tcp C->R, routed C->S, direct o2ib R->S (${SECS} s each; load $(cut -d' ' -f1 /proc/loadavg))"
			run "$ps" "$dir" tcp c "$C_TCP" "$R_TCP"
			run "$ps" "$dir" routed c "$C_TCP" "$S_O2IB"
			run "$ps" "$dir" o2ib r "$R_O2IB" "$S_O2IB"
		done
	done
	echo "$ps $(routing_value memory_max_seen)" >>"$UL_TMP/memory"
	cp "$UL_TMP/routing.json" "$UL_TMP/routing_$ps.json" # the pools, for the summary
	stop_nodes
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$UL_TMP/runs"
: >"$UL_TMP/memory"
for ps in 4096 65536; do
	phase "$ps"
done

echo "1 MiB brw, $CONC in flight, ${SECS} s per run, $ROUNDS rounds; C $C_TCP -> R $R_TCP + $R_O2IB (routing) -> S $S_O2IB"
"$UL_PYTHON" - "$UL_TMP/runs" "$UL_TMP/memory" <<'PY'
import statistics, sys
med = statistics.median
runs = {}
for ps, d, kind, *v in (l.split() for l in open(sys.argv[1])):
    if kind != "warm":  # MB/s, R's CPU per GiB forwarded, C's, R's and S's per GiB moved
        runs.setdefault((ps, d, kind), []).append(tuple(map(float, v)))
def col(ps, d, kind, i):
    return [r[i] for r in runs[(ps, d, kind)]]
for ps in ("4096", "65536"):
    for d in ("write", "read"):
        print(f"  runs, router page_size {ps}, brw {d} (MB/s): " + " | ".join(
            f"{k} " + " ".join(f"{v:.0f}" for v in col(ps, d, k, 0)) for k in ("tcp", "routed", "o2ib")))
        print(f"    router CPU ms per GiB (forwarded, or moved as a direct hop's end): " + " | ".join(
            f"{k} " + " ".join(f"{v:.0f}" for v in col(ps, d, k, 1)) for k in ("tcp", "routed", "o2ib")))
print("medians (MB/s); ratio = routed / the slower direct hop, per round, median (goal >= 0.8)")
for ps in ("4096", "65536"):
    for d in ("write", "read"):
        tcp, rt, ib = (col(ps, d, k, 0) for k in ("tcp", "routed", "o2ib"))
        ratio = med(r / min(t, i) for t, r, i in zip(tcp, rt, ib))
        print(f"  router page_size {ps:>5}, brw {d:<5}: routed {med(rt):7.0f}   direct tcp {med(tcp):7.0f}   "
              f"direct o2ib {med(ib):7.0f}   ratio {ratio:.2f}   (of the medians: routed/tcp {med(rt) / med(tcp):.2f})")
        rc, tc, ic = (med(col(ps, d, k, 1)) for k in ("routed", "tcp", "o2ib"))
        print(f"    router CPU ms per GiB forwarded {rc:.0f}   (as the end of direct tcp {tc:.0f}, of direct o2ib {ic:.0f}: "
              f"sum {tc + ic:.0f})")
        node = {k: [med(col(ps, d, k, i)) for i in (2, 3, 4)] for k in ("routed", "tcp", "o2ib")}
        print("    CPU ms per GiB moved, C/R/S (sum): " + "   ".join(
            f"{k} {'/'.join(f'{x:.0f}' for x in node[k])} ({sum(node[k]):.0f})" for k in ("routed", "tcp", "o2ib")))
mem = dict(l.split() for l in open(sys.argv[2]))
m4, m64 = mem.get("4096", "n/a"), mem.get("65536", "n/a")
def mib(v):
    return f"{int(v) / 2**20:.2f} MiB ({v} B)" if v.isdigit() else v
eq = (f"64K/4K {int(m64) / int(m4):.3f}" if m4.isdigit() and m64.isdigit() and int(m4)
      else "no figure: no routing show --json")
print(f"router buffer memory high-water (routing show memory_max_seen), same load: page_size 4096 {mib(m4)}   "
      f"page_size 65536 {mib(m64)}   {eq} (goal: equal)")
PY
# the router's pools after each phase: buffer size, buffers made, most in use at once
for ps in 4096 65536; do
	"$UL_PYTHON" - "$UL_TMP/routing_$ps.json" "$ps" <<'PY' || echo "  router page_size $ps: no routing show --json"
import json, sys
pools, glob = json.load(open(sys.argv[1]))["routing"][:2]
pools = next(iter(pools.values()))
print(f"  router page_size {sys.argv[2]:>5} pools (size B: allocated, max in use): " + "   ".join(
    f"{n} {p['size']}: {p['allocated']}, {p['nbuffers'] - p['mincredits']}" for n, p in pools.items()) +
    f"   forwarded {glob['forwarded']['msgs']} msgs, drops {sum(glob['forwarded']['drops'].values())}")
PY
done
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs; load average (1/5/15 min): $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
