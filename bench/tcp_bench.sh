#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tcp LND benchmark on loopback, in one run (not part of the test suite; needs root for port 988):
#   1. streaming 1 MiB Put bandwidth between two ulnetd (ulnet-selftest brw read: the server PUTs,
#      8 in flight; brw write, the Get direction, is printed too)
#      against iperf3 single-stream bandwidth (-l 1M) between the same addresses; prints the ratio
#      (goal >= 0.9);
#   2. 0-byte Put message rate and ping round-trip time against a raw TCP 8-byte ping-pong
#      (bench/tcp_msgrate.c, two nodes in one process).
# Usage: bench/tcp_bench.sh [SECONDS]   (BUILD=build dir, default ./build; ROUNDS=3 medians)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-5}
ROUNDS=${ROUNDS:-3}
CONC=${CONC:-4} # RPCs in flight: 4 keeps the working set cache-friendly on this VM (8 is ~10% slower)
source "$SRC/tests/integration/lib.sh"
ul_init
command -v iperf3 >/dev/null || ul_fail "iperf3 not installed (apt-get install iperf3)"
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
T=${BENCH_T:-38} # the 127.T.0.0/16 block
A=$(ul_addr "$T" 1) B=$(ul_addr "$T" 2)

for n in 1 2; do
	ul_start_node "n$n" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$T" "$n")@tcp
YAML
done

mbps() { "$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["MBps"])' "$1"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# brw read: the server streams 1 MiB LNet PUTs into the client (data B -> A); brw write: the server
# GETs (REPLY stream A -> B). iperf3 runs in the Put's data direction. This VM is noisy, so the three
# measurements are interleaved over ROUNDS rounds and the medians compared.
put=() get=() ipf=()
for r in $(seq "$ROUNDS"); do
	ul_step "round $r/$ROUNDS: ulnet brw read (Put stream $B -> $A), ${SECS} s"
	"$SST" --node "$(ul_sock n1)" --json brw read --from "$A@tcp" --to "$B@tcp" --size 1M --concurrency "$CONC" \
		--duration "$SECS" >"$UL_TMP/brw.json"
	put+=("$(mbps "$UL_TMP/brw.json")")
	ul_step "round $r/$ROUNDS: ulnet brw write (Get/REPLY stream $A -> $B), ${SECS} s"
	"$SST" --node "$(ul_sock n1)" --json brw write --from "$A@tcp" --to "$B@tcp" --size 1M --concurrency "$CONC" \
		--duration "$SECS" >"$UL_TMP/brw_w.json"
	get+=("$(mbps "$UL_TMP/brw_w.json")")
	ul_step "round $r/$ROUNDS: iperf3 one stream, -l 1M, $B -> $A, ${SECS} s"
	iperf3 -s -B "$A" -p 5399 -1 >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	iperf3 -c "$A" -B "$B" -p 5399 -l 1M -t "$SECS" -J >"$UL_TMP/iperf.json"
	wait "$srv" || true
	ipf+=("$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e6)' "$UL_TMP/iperf.json")")
done
echo "runs (MB/s): put ${put[*]} | get ${get[*]} | iperf3 ${ipf[*]}"
ulnet_mbps=$(median "${put[@]}")
ulnet_get_mbps=$(median "${get[@]}")
iperf_mbps=$(median "${ipf[@]}")

ul_stop_node n1
ul_stop_node n2

ul_step "0-byte Put rate and ping RTT (two nodes in one process)"
ninja -C "$BUILD" bench/tcp_msgrate >/dev/null && cp "$BUILD/bench/tcp_msgrate" "$UL_TMP/tcp_msgrate"
"$UL_TMP/tcp_msgrate" "$(ul_addr "$T" 3)" "$(ul_addr "$T" 4)" "$SECS" >"$UL_TMP/rate.txt" 2>"$UL_TMP/rate.err" \
	|| ul_fail "tcp_msgrate: $(cat "$UL_TMP/rate.err")"

"$UL_PYTHON" - "$ulnet_mbps" "$iperf_mbps" "$UL_TMP/rate.txt" "$ulnet_get_mbps" <<'PY'
import sys
u, i, g = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[4])
r = dict(l.split() for l in open(sys.argv[3]))
print(f"1 MiB Put bandwidth : ulnet {u:9.1f} MB/s   iperf3 {i:9.1f} MB/s (medians)   ratio {u / i:.2f} (goal >= 0.90)")
print(f"1 MiB Get bandwidth : ulnet {g:9.1f} MB/s                          ratio {g / i:.2f}")
print(f"0-byte Put rate     : {float(r['put0_rate']):9.0f} msg/s")
print(f"round trip          : ulnet ping {float(r['ping_rtt_us']):7.1f} us   raw TCP ping-pong {float(r['tcp_rtt_us']):7.1f} us")
PY
