#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# System calls per 1 MiB brw RPC on the node that copies (not part of the test suite): two ulnetd on
# the shm provider (127.143.0.{1,3}@o2ib, 4 KiB pages, busy polling as bench/o2ib_bench.sh), brw read
# (the server n3 PUTs: it copies) and brw write (the server GETs: the client n1 copies), each for
# SECONDS while `perf stat` counts the copying node's system calls (all, and the ones the data path
# makes), divided by the RPCs brw reports. Needs perf and the syscalls tracepoints (root).
# Usage: bench/o2ib_syscalls.sh [SECONDS]   (BUILD=build dir, default ./build; CONC=8 in flight)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-3}
CONC=${CONC:-8}
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
command -v perf >/dev/null || ul_fail "no perf"
UL_BUSY_POLL_US=${BUSY_POLL_US:-100}
ul_o2ib_node n1 143 1 4096 10
ul_o2ib_node n3 143 3 4096 10
nid() { echo "$(ul_addr 143 "$1")@o2ib"; }
EV=raw_syscalls:sys_enter
for s in sendmsg recvmmsg epoll_wait read write poll sched_yield; do EV+=,syscalls:sys_enter_$s; done
# run DIR COPIER: perf over the middle SECS-1 seconds of a SECS-second brw
run() {
	local pid pp
	pid=$(ul_pid "n$2")
	perf stat -x, -e "$EV" -p "$pid" -o "$UL_TMP/perf.txt" -- sleep "$((SECS - 1))" &
	pp=$!
	"$SST" --node "$(ul_sock n1)" --json brw "$1" --from "$(nid 1)" --to "$(nid 3)" --size 1M --check none \
		--concurrency "$CONC" --duration "$SECS" >"$UL_TMP/brw.json" || ul_fail "brw $1"
	wait $pp
	"$UL_PYTHON" - "$UL_TMP/brw.json" "$UL_TMP/perf.txt" "$1" "$((SECS - 1))" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rpcs = j["bytes"] / 2**20 / j["seconds"] * float(sys.argv[4])
out = []
for l in open(sys.argv[2]):
    f = l.strip().split(",")
    if len(f) > 3 and f[0].replace(".", "").isdigit():
        name = f[2].split(":")[-1].replace("sys_enter_", "")
        out.append(f"{'all' if name == 'sys_enter' else name} {float(f[0]) / rpcs:.2f}")
print(f"brw {sys.argv[3]}: {j['MBps']:.0f} MB/s; system calls per RPC on the copying node: " + ", ".join(out))
PY
}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
run read 3
run write 1
