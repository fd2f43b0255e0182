#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per round trip of one ulnetd (callgrind: deterministic, blind to the machine's load),
# for the round trips tcp_bench.sh times: ulnet_ping (ulnetctl ping) and a selftest ping RPC
# (concurrency 1). Two nodes on loopback as tcp_bench.sh starts them; one of them runs under
# valgrind --tool=callgrind, its counters zeroed after a warm-up and dumped after the round trips.
# Prints the Ir per round trip of the whole process, the sched_yield and recv calls per round trip
# (a busy spin's: under valgrind a node runs ~50x slower, so a busy window needs to be long, e.g.
# 20000, for it to spin) and
# the Ir of the function that spins (loop_wait when not inlined, inclusive; the old tree's
# ulnet__loop_lead too, where a waiting caller did its loop's work); with sleeping loops those are ~0.
# Usage: bench/tcp_callgrind.sh ping|sst client|server [BUSY_US]
#        (BUILD=build dir with symbols, e.g. meson setup build-cg --buildtype=release -Ddebug=true;
#         N=ulnet_pings (default 1000, ulnetctl's most); SECS=selftest ping seconds (default 4); BENCH_T=39 the block;
#         KEEP=1 prints the callgrind output file instead of deleting it)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build-cg}
KIND=${1:?ping|sst} SIDE=${2:?client|server} BUSY_US=${3:-0}
N=${N:-1000} SECS=${SECS:-4}
source "$SRC/tests/integration/lib.sh"
ul_init
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
T=${BENCH_T:-39}
A=$(ul_addr "$T" 1) B=$(ul_addr "$T" 2)
source "$SRC/bench/callgrind_lib.sh"
cg_wrapper
cg_node=$([[ $SIDE == client ]] && echo n1 || echo n2)
for n in 1 2; do
	[[ n$n == "$cg_node" ]] && ULNETD=$UL_TMP/ulnetd-cg || ULNETD=$REAL
	ul_launch_node "n$n" <<YAML
node:
    busy_poll_us: $BUSY_US
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$T" "$n")@tcp
YAML
	ul_wait_ready "n$n" 60
done
ULNETD=$REAL
ul_ctl n1 ping "$B@tcp" --count 50 --timeout_ms 20000 >/dev/null || ul_fail "warm-up ping failed"
if [[ $KIND == sst ]]; then # warm-up: the selftest session and its first RPCs
	"$SST" --node "$(ul_sock n1)" --json ping --from "$A@tcp" --to "$B@tcp" --concurrency 1 --duration 1 >/dev/null
fi
vpid=$(pgrep -f "callgrind-out-file=$CG" | head -1) # valgrind execs in place: the node's pid
callgrind_control -z "$vpid" >/dev/null
if [[ $KIND == ping ]]; then
	ul_ctl n1 ping "$B@tcp" --count "$N" --timeout_ms 20000 >/dev/null || ul_fail "ping failed"
	rts=$N
else
	"$SST" --node "$(ul_sock n1)" --json ping --from "$A@tcp" --to "$B@tcp" --concurrency 1 --duration "$SECS" \
		>"$UL_TMP/sst.json" || ul_fail "selftest ping failed"
	rts=$("$UL_PYTHON" -c 'import json,sys; print(int(float(json.load(open(sys.argv[1]))["rpcs"])))' "$UL_TMP/sst.json")
fi
callgrind_control -d "$vpid" >/dev/null
f=$(ls -t "$CG"* | head -1)
"$UL_PYTHON" - "$f" "$KIND" "$SIDE" "$BUSY_US" "$rts" <<'PY'
import re, sys
from collections import defaultdict
path, k, side, busy, rts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
names, self_ir, incl, calls = {}, defaultdict(int), defaultdict(int), defaultdict(int)
fn = cfn = None
pending = 0  # the next cost line is a call's inclusive cost
def name(v):  # "(id) name" or "(id)": callgrind's name compression
    m = re.match(r"\((\d+)\)(?: (.*))?", v)
    if not m:
        return v
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), v)
for line in open(path):
    if line.startswith("fn="):
        fn = name(line[3:].strip())
    elif line.startswith("cfn="):
        cfn = name(line[4:].strip())
    elif line.startswith("calls="):
        calls[cfn] += int(line[6:].split()[0])
        pending = 1
    elif line[:1].isdigit() or line[:1] in "+-*":
        parts = line.split()
        if len(parts) < 2:
            continue
        ir = int(parts[1])
        if pending:
            if cfn != fn:
                incl[fn] += ir
            pending = 0
        else:
            self_ir[fn] += ir
            incl[fn] += ir
total = sum(self_ir.values())
spins = sum(v for n, v in calls.items() if n.startswith("sched_yield"))
recvs = sum(v for n, v in calls.items() if n.split("@")[0] in ("recv", "__libc_recv"))
wait = sum(v for n, v in incl.items() if n == "loop_wait" or n.startswith("loop_wait."))
lead = incl.get("ulnet__loop_lead", 0)
print(f"{k:4} {side:6} busy_poll_us {busy:>3}: {rts} round trips, Ir/rt {total / rts:8.0f} | yields/rt {spins / rts:5.1f} | recv/rt {recvs / rts:5.1f}"
      f" | loop_wait Ir/rt {wait / rts:7.0f} | loop_lead Ir/rt {lead / rts:7.0f} | rest Ir/rt {(total - wait - lead) / rts:7.0f}")
if len(sys.argv) > 6 or __import__("os").environ.get("TOP"):
    for n, v in sorted(self_ir.items(), key=lambda x: -x[1])[:int(__import__("os").environ.get("TOP", 25))]:
        print(f"  {v / rts:9.0f} self Ir/rt  {calls.get(n, 0) / rts:7.2f} calls/rt  {n}")
PY
[[ ${KEEP:-0} == 1 ]] && cp "$f" "/tmp/cg.$KIND.$SIDE.$BUSY_US.$$" && echo "kept /tmp/cg.$KIND.$SIDE.$BUSY_US.$$"
exit 0
