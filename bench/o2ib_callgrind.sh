#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per 1 MiB brw RPC on the node that copies, besides the copy (callgrind: deterministic,
# blind to the machine's load, which makes o2ib_bench.sh's ratios swing by half on this shared VM).
# Two ulnetd on the shm provider (127.145.0.{1,3}@o2ib, 4 KiB pages, busy polling as o2ib_bench.sh);
# brw read (the server n3 PUTs: it copies) or brw write (the server GETs: the client n1 copies), with
# the copying node under valgrind --tool=callgrind, its counters zeroed after a warm-up and dumped
# after SECS seconds. Prints the RPCs, the instructions per RPC in memcpy/memmove (the data: ~1.05 M
# per MiB) and in everything else, and the functions that cost most of the rest per RPC.
# Usage: bench/o2ib_callgrind.sh read|write   (BUILD=build dir, default ./build; SECS=6; CONC=8;
#        TOP=25 functions listed)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
DIR=${1:?read|write}
SECS=${SECS:-6}
CONC=${CONC:-8}
TOP=${TOP:-25}
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
[[ $DIR == read || $DIR == write ]] || ul_fail "read or write, not '$DIR'"
source "$SRC/bench/callgrind_lib.sh"
cg_wrapper
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
callgrind_annotate --threshold=100 "$dump" 2>/dev/null | "$UL_PYTHON" -c '
import re, sys
rpcs, top = int(sys.argv[1]), int(sys.argv[2])
rows = []
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+\(.*?\)\s+(\S+)", line)
    if m:
        rows.append((int(m.group(1).replace(",", "")), m.group(2).split(":")[-1]))
total = rows[0][0]  # PROGRAM TOTALS
copy = sum(n for n, f in rows[1:] if "memcpy" in f or "memmove" in f)
print("instructions per RPC: copy %.0f, everything else %.0f" % (copy / rpcs, (total - copy) / rpcs))
print("the rest, by function (self, per RPC):")
for n, f in [r for r in rows[1:] if r[1] not in ("clone", "start_thread") and "memcpy" not in r[1]
             and "memmove" not in r[1]][:top]:
    print("  %7.0f  %s" % (n / rpcs, f))
' "$rpcs" "$TOP"
