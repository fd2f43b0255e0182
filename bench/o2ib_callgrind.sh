#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per 1 MiB brw RPC on the node that copies, besides the copy (callgrind: deterministic,
# blind to the machine's load, which makes o2ib_bench.sh's ratios swing by half on this shared VM).
# Two ulnetd on the shm provider (127.145.0.{1,3}@o2ib, 4 KiB pages, busy polling as o2ib_bench.sh);
# brw read (the server n3 PUTs: it copies) or brw write (the server GETs: the client n1 copies), with
# the copying node under valgrind --tool=callgrind, its counters zeroed after a warm-up and dumped
# after SECS seconds. Prints the RPCs, the instructions per RPC in memcpy/memmove (the data: ~1.05 M
# per MiB) and in everything else, and the functions that cost most of the rest per RPC.
# With CACHE=BYTES, callgrind also simulates the caches, with a last level of BYTES (8-way): give it
# the size of one core's L2 (1048576 on this VM's EPYC), and its misses besides the copy's are the
# lines the copying node fetches again after each copy has evicted them from L2 (the copy itself
# runs as fast in brw as in the raw bench: what brw loses is this per-RPC work and its refills).
# Usage: bench/o2ib_callgrind.sh read|write   (BUILD=build dir, default ./build; SECS=6; CONC=8;
#        TOP=25 functions listed; CACHE=L2 bytes to simulate)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
DIR=${1:?read|write}
SECS=${SECS:-6}
CONC=${CONC:-8}
TOP=${TOP:-25}
CACHE=${CACHE:-}
[[ -z $CACHE || $CACHE =~ ^[0-9]+$ ]] || { echo "CACHE is a size in bytes, not '$CACHE'" >&2; exit 2; }
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
[[ $DIR == read || $DIR == write ]] || ul_fail "read or write, not '$DIR'"
source "$SRC/bench/callgrind_lib.sh"
cg_wrapper
[[ -z $CACHE ]] || sed -i "s/--tool=callgrind/--tool=callgrind --cache-sim=yes --LL=$CACHE,8,64/" "$UL_TMP/ulnetd-cg"
copier=$([[ $DIR == read ]] && echo n3 || echo n1)
UL_BUSY_POLL_US=${BUSY_POLL_US:-100}
for n in 1 3; do
	[[ n$n == "$copier" ]] && ULNETD=$UL_TMP/ulnetd-cg || ULNETD=$REAL
	ul_o2ib_node "n$n" 145 "$n" 4096 30
done
ULNETD=$REAL
nid() { echo "$(ul_addr 145 "$1")@o2ib"; }
brw() { # SECONDS OUT
	"$SST" --node "$(ul_sock n1)" --json brw "$DIR" --from "$(nid 1)" --to "$(nid 3)" --size 1M --check none \
		--concurrency "$CONC" --duration "$1" >"$2" || ul_fail "brw $DIR: $(cat "$2")"
}
brw 2 "$UL_TMP/warm.json"
pid=$(ul_pid "$copier")
callgrind_control -z "$pid" >/dev/null
brw "$SECS" "$UL_TMP/brw.json"
callgrind_control -d "$pid" >/dev/null
rpcs=$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["rpcs"])' "$UL_TMP/brw.json")
dump=$(ls "$CG".* | sort | tail -1)
echo "brw $DIR 1 MiB, concurrency $CONC, copying node $copier under callgrind: $rpcs RPCs in ${SECS} s"
callgrind_annotate --threshold=100 --show-percs=no "$dump" 2>/dev/null | "$UL_PYTHON" -c '
import re, sys
rpcs, top, cache = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ev, rows = None, []
for line in sys.stdin:
    if line.startswith("Events shown:"):
        ev = line.split()[2:]
    m = ev and re.match(r"^\s*((?:[\d,.]+\s+){%d})(\S+)" % len(ev), line)
    if m:  # the counts, then file:function (the function list; source lines follow it)
        rows.append(([int(x.replace(",", "")) if x != "." else 0 for x in m.group(1).split()],
                     m.group(2).split(":")[-1]))
total = rows[0][0]  # PROGRAM TOTALS
seen, funcs = set(), []
for n, f in rows[1:]:
    if f not in seen:  # a function is listed once; annotated source comes after the list
        seen.add(f)
        funcs.append((n, f))
is_copy = lambda f: "memcpy" in f or "memmove" in f
copy = [sum(c) for c in zip(*[n for n, f in funcs if is_copy(f)])]
rest = [(t - c) / rpcs for t, c in zip(total, copy)]
print("instructions per RPC: copy %.0f, everything else %.0f" % (copy[0] / rpcs, rest[0]))
if "ILmr" in ev:
    i = {e: k for k, e in enumerate(ev)}
    print("simulated misses per RPC besides the copy: L1 instruction %.0f, L1 data %.0f read %.0f write; "
          "last level (%s bytes) instruction %.0f, data %.0f read %.0f write"
          % tuple([rest[i[e]] for e in ("I1mr", "D1mr", "D1mw")] + [cache] +
                  [rest[i[e]] for e in ("ILmr", "DLmr", "DLmw")]))
print("the rest, by function (self, per RPC):")
for n, f in [r for r in funcs if r[1] not in ("clone", "start_thread") and not is_copy(r[1])][:top]:
    print("  %7.0f  %s" % (n[0] / rpcs, f))
' "$rpcs" "$TOP" "$CACHE"
