#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tcp LND benchmark on loopback, in one run (not part of the test suite; needs root for port 988).
# Every ulnet number is printed next to its baseline measured in the same run, between the same
# addresses:
#   1. streaming 1 MiB Put and Get bandwidth between two ulnetd (ulnet-selftest brw read: the server
#      PUTs; brw write: the server GETs) against iperf3 single-stream bandwidth (-l 1M). brw runs with
#      --check none: iperf3 neither writes a pattern into its buffer per message nor reads what it
#      received, and check=full does both for every byte (the selftest's work, not the data path's);
#      unchecked sinks share one buffer, as iperf3 reads into one (docs/selftest.md); with the CPU
#      time per GiB of both ends (ulnetd: every thread's schedstat; iperf3: its own getrusage figures);
#   2. round trips between two ulnetd in separate processes: ulnet_ping (ulnetctl ping, the time
#      ulnet_ping measures inside ulnetd) and a selftest ping RPC (ulnet-selftest ping, concurrency
#      1, median latency), each against a raw TCP ping-pong between two processes (bench/tcp_pingpong.c)
#      carrying the bytes its LNet messages carry on the wire; once with sleeping loops, once with
#      node busy_poll_us (and the raw ping-pong polling its socket); medians over ROUNDS interleaved
#      rounds;
#   3. the node lock's hold-time histogram of the server node over the whole run (stats show -v);
#   4. 0-byte Put message rate (bench/tcp_msgrate.c, two nodes in one process, one API thread, 64 Puts
#      in flight; medians over ROUNDS interleaved rounds, every run printed), with 1 and with 2 loop
#      threads per node (node option loops), the process's CPU
#      time and context switches per Put beside it, and the load average it ran under; with the
#      default peer_credits 8 (the kernel socklnd's), then with peer_credits 64: a Put's credit
#      comes back once the LND has written it, so a sendmsg carries at most peer_credits Puts and
#      that, not the per-message work, bounds the rate at 8. One peer: its conns and its
#      submissions are on one loop, so a second loop only runs the timers (no hand-off, no gain
#      either). Each once with the API thread sleeping when its event queue is empty and once with
#      it polling the queue EQ_SPIN_US (default 20) before it sleeps (ulnet_eq_set_spin), as
#      message-rate benchmarks poll their completions: the sleeping thread's wake-ups, not the
#      cores, bound the rate then (the three threads keep the two cores about half busy).
# Usage: bench/tcp_bench.sh [SECONDS]   (BUILD=build dir, default ./build; ROUNDS=3 medians;
#        BENCH_T=T uses the 127.T.0.0/16 block, default 38; BUSY_US=50 the busy-poll window;
#        LAT_ONLY=1 runs the round trips (2.) alone: no brw, iperf3, lock histogram or message rate;
#        BW_ONLY=1 runs the bandwidths (1.) alone: no round trips, lock histogram or message rate;
#        for A/B runs of two builds, alternate invocations with BUILD=a and BUILD=b)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-5}
ROUNDS=${ROUNDS:-3}
CONC=${CONC:-4} # RPCs in flight: 4 keeps the working set cache-friendly on this VM (8 is ~10% slower)
BUSY_US=${BUSY_US:-50}
EQ_SPIN_US=${EQ_SPIN_US:-20}
PINGS=${PINGS:-1000}
# Bytes on the wire per round trip (socklnd V3: 24-byte ksock_msg_hdr + 72-byte LNet header = 96):
# ulnet_ping is a GET (96) answered by a REPLY carrying the ping info (48 bytes for the two NIs, lo
# and tcp, of a node here); a selftest ping is a PUT of its 160-byte srpc message each way.
PING_REQ=96 PING_REP=144 SST_MSG=256
source "$SRC/tests/integration/lib.sh"
ul_init
source "$SRC/bench/bench_lib.sh" # median, mbps, nodes_cpu_ns, brw_cpu, start_nodes, stop_nodes, sst_ping_us
LAT_ONLY=${LAT_ONLY:-0}
BW_ONLY=${BW_ONLY:-0}
[[ $LAT_ONLY == 1 && $BW_ONLY == 1 ]] && ul_fail "LAT_ONLY=1 and BW_ONLY=1 leave nothing to run"
[[ $LAT_ONLY == 1 ]] || command -v iperf3 >/dev/null || ul_fail "iperf3 not installed (apt-get install iperf3)"
T=${BENCH_T:-38} # the 127.T.0.0/16 block
A=$(ul_addr "$T" 1) B=$(ul_addr "$T" 2)

gcc -O2 -std=gnu11 -D_GNU_SOURCE "$SRC/bench/tcp_pingpong.c" -o "$UL_TMP/tcp_pingpong"

# ulnet_ping round trip (median of PINGS, us), as ulnet_ping timed it inside ulnetd
ping_us() {
	ul_ctl n1 ping "$B@tcp" --count "$PINGS" --timeout_ms 5000 --json >"$UL_TMP/ping.json" || ul_fail "ping failed"
	"$UL_PYTHON" -c 'import json,sys,statistics; print(statistics.median(float(p["time (ms)"]) * 1000 for p in json.load(open(sys.argv[1]))["ping"]))' "$UL_TMP/ping.json"
}
# raw TCP ping-pong between two processes (median, us); port 7400 on B, from A
raw_us() { # REQ_BYTES REP_BYTES [busy]
	rm -f "$UL_TMP/pp_srv.out" # else the last round's "listening" may be read before the new server truncates it
	"$UL_TMP/tcp_pingpong" server "$B" 7400 "$1" "$2" ${3:-} >"$UL_TMP/pp_srv.out" &
	local srv=$! i
	for i in $(seq 100); do grep -q listening "$UL_TMP/pp_srv.out" 2>/dev/null && break; sleep 0.05; done
	"$UL_TMP/tcp_pingpong" client "$B" 7400 "$A" 20000 "$1" "$2" ${3:-} >"$UL_TMP/pp.out" || ul_fail "tcp_pingpong failed"
	wait "$srv" || true
	awk '{print $2}' "$UL_TMP/pp.out"
}

bw_round() { # ROUND: bandwidth against iperf3 and the CPU per GiB of both
	local r=$1 c0 srv
	ul_step "round $r/$ROUNDS: ulnet brw read (Put stream $B -> $A), ${SECS} s"
	c0=$(nodes_cpu_ns)
	"$SST" --node "$(ul_sock n1)" --json brw read --from "$A@tcp" --to "$B@tcp" --size 1M --concurrency "$CONC" \
		--check none --duration "$SECS" >"$UL_TMP/brw.json"
	putc+=("$(brw_cpu "$c0" "$UL_TMP/brw.json")")
	put+=("$(mbps "$UL_TMP/brw.json")")
	ul_step "round $r/$ROUNDS: ulnet brw write (Get/REPLY stream $A -> $B), ${SECS} s"
	c0=$(nodes_cpu_ns)
	"$SST" --node "$(ul_sock n1)" --json brw write --from "$A@tcp" --to "$B@tcp" --size 1M --concurrency "$CONC" \
		--check none --duration "$SECS" >"$UL_TMP/brw_w.json"
	getc+=("$(brw_cpu "$c0" "$UL_TMP/brw_w.json")")
	get+=("$(mbps "$UL_TMP/brw_w.json")")
	ul_step "round $r/$ROUNDS: iperf3 one stream, -l 1M, $B -> $A, ${SECS} s"
	iperf3 -s -B "$A" -p 5399 -1 >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	iperf3 -c "$A" -B "$B" -p 5399 -l 1M -t "$SECS" -J >"$UL_TMP/iperf.json"
	wait "$srv" || true
	ipf+=("$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e6)' "$UL_TMP/iperf.json")")
	# iperf3's own CPU figures (getrusage of client and server over the test) per GiB received
	ipfc+=("$("$UL_PYTHON" -c 'import json,sys; e = json.load(open(sys.argv[1]))["end"]; c = e["cpu_utilization_percent"]
print((c["host_total"] + c["remote_total"]) / 100 * e["sum_sent"]["seconds"] * 1e3 / (e["sum_received"]["bytes"] / 2**30))' "$UL_TMP/iperf.json")")
}

# This VM is noisy: every measurement is interleaved over ROUNDS rounds and the medians compared.
load0=$(cut -d' ' -f1-3 /proc/loadavg)
put=() get=() ipf=() putc=() getc=() ipfc=() png=() sst=() raw=() raws=() pngb=() sstb=() rawb=() rawsb=()
start_nodes 0
for r in $(seq "$ROUNDS"); do
	[[ $LAT_ONLY == 1 ]] || bw_round "$r"
	[[ $BW_ONLY == 1 ]] && continue
	ul_step "round $r/$ROUNDS: round trips (ulnet_ping x$PINGS, selftest ping ${SECS} s, raw TCP x20000)"
	png+=("$(ping_us)")
	sst+=("$(sst_ping_us n1 "$A@tcp" "$B@tcp")")
	raw+=("$(raw_us $PING_REQ $PING_REP)")
	raws+=("$(raw_us $SST_MSG $SST_MSG)")
done
ul_ctl n2 stats show -v --json >"$UL_TMP/stats_n2.json"
stop_nodes 1
if [[ $BW_ONLY == 1 ]]; then
	echo "runs (MB/s): put ${put[*]} | get ${get[*]} | iperf3 ${ipf[*]}"
	echo "runs (CPU ms per GiB, both ends): put ${putc[*]} | get ${getc[*]} | iperf3 ${ipfc[*]}"
	echo "load average (1/5/15 min): $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	"$UL_PYTHON" - "$(median "${putc[@]}")" "$(median "${getc[@]}")" "$(median "${ipfc[@]}")" \
		"$(median "${put[@]}")" "$(median "${get[@]}")" "$(median "${ipf[@]}")" <<'PY'
import sys
uc, gc, ic, u, g, i = map(float, sys.argv[1:])
print(f"1 MiB Put bandwidth : ulnet {u:9.1f} MB/s   iperf3 {i:9.1f} MB/s (medians)   ratio {u / i:.2f} (goal >= 0.95)")
print(f"1 MiB Get bandwidth : ulnet {g:9.1f} MB/s   iperf3 {i:9.1f} MB/s (medians)   ratio {g / i:.2f} (goal >= 0.95)")
print(f"  CPU per GiB (both ends, medians): Put {uc:.0f} ms, Get {gc:.0f} ms, iperf3 {ic:.0f} ms")
PY
	exit 0
fi

start_nodes "$BUSY_US"
for r in $(seq "$ROUNDS"); do
	ul_step "round $r/$ROUNDS: round trips with busy polling (busy_poll_us $BUSY_US; raw ping-pong polling)"
	pngb+=("$(ping_us)")
	sstb+=("$(sst_ping_us n1 "$A@tcp" "$B@tcp")")
	rawb+=("$(raw_us $PING_REQ $PING_REP busy)")
	rawsb+=("$(raw_us $SST_MSG $SST_MSG busy)")
done
stop_nodes 1
[[ $LAT_ONLY == 1 ]] || echo "runs (MB/s): put ${put[*]} | get ${get[*]} | iperf3 ${ipf[*]}"
[[ $LAT_ONLY == 1 ]] || echo "runs (CPU ms per GiB, both ends): put ${putc[*]} | get ${getc[*]} | iperf3 ${ipfc[*]}"
echo "runs (us): ulnet_ping ${png[*]} | raw $PING_REQ/$PING_REP B ${raw[*]} | selftest ping ${sst[*]} | raw $SST_MSG/$SST_MSG B ${raws[*]}"
echo "runs busy (us): ulnet_ping ${pngb[*]} | raw ${rawb[*]} | selftest ping ${sstb[*]} | raw ${rawsb[*]}"

echo "load average (1/5/15 min): $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) after the round trips"
if [[ $LAT_ONLY == 1 ]]; then
	"$UL_PYTHON" - "$(median "${png[@]}")" "$(median "${sst[@]}")" "$(median "${raw[@]}")" "$(median "${raws[@]}")" \
		"$(median "${pngb[@]}")" "$(median "${sstb[@]}")" "$(median "${rawb[@]}")" "$(median "${rawsb[@]}")" <<'PY'
import sys
p, s, r, rs, pb, sb, rb, rsb = map(float, sys.argv[1:])
print(f"round trip (medians): ulnet_ping {p:6.1f} us vs raw {r:6.1f} us  ratio {p / r:.2f} | selftest ping {s:6.1f} us vs raw {rs:6.1f} us  ratio {s / rs:.2f}")
print(f"  busy polling       : ulnet_ping {pb:6.1f} us vs raw {rb:6.1f} us  ratio {pb / rb:.2f} | selftest ping {sb:6.1f} us vs raw {rsb:6.1f} us  ratio {sb / rsb:.2f}")
PY
	exit 0
fi
ul_step "0-byte Put rate (two nodes in one process)"
ninja -C "$BUILD" bench/tcp_msgrate >/dev/null && cp "$BUILD/bench/tcp_msgrate" "$UL_TMP/tcp_msgrate"
# each configuration once per round, interleaved, and the medians compared (one sample moves by
# half between runs on this host)
msgrate() { # ROUND NAME LOOPS PEER_CREDITS EQ_SPIN_US ADDR_A ADDR_B
	"$UL_TMP/tcp_msgrate" "$(ul_addr "$T" "$6")" "$(ul_addr "$T" "$7")" "$SECS" "$3" put0 "$4" "$5" \
		>"$UL_TMP/$2.$1.txt" 2>"$UL_TMP/rate.err" \
		|| ul_fail "tcp_msgrate ($3 loops, peer_credits $4, eq spin $5 us): $(cat "$UL_TMP/rate.err")"
}
for r in $(seq "$ROUNDS"); do
	ul_step "round $r/$ROUNDS: 0-byte Put rate, 1 and 2 loops, peer_credits 8 and 64, API thread sleeping and polling, ${SECS} s each"
	for pc in 8 64; do
		for sp in 0 "$EQ_SPIN_US"; do
			msgrate "$r" "rate1_${pc}_$sp" 1 "$pc" "$sp" 3 4
			msgrate "$r" "rate2_${pc}_$sp" 2 "$pc" "$sp" 5 6
		done
	done
done
cut -d' ' -f1 /proc/loadavg >"$UL_TMP/load.txt"

"$UL_PYTHON" - "$UL_TMP" "$(median "${putc[@]}")" "$(median "${getc[@]}")" "$(median "${ipfc[@]}")" \
	"$(median "${put[@]}")" "$(median "${get[@]}")" "$(median "${ipf[@]}")" \
	"$(median "${png[@]}")" "$(median "${sst[@]}")" "$(median "${raw[@]}")" "$(median "${raws[@]}")" \
	"$(median "${pngb[@]}")" "$(median "${sstb[@]}")" "$(median "${rawb[@]}")" "$(median "${rawsb[@]}")" "$ROUNDS" "$EQ_SPIN_US" <<'PY'
import json, statistics, sys
t = sys.argv[1]
uc, gc, ic, u, g, i, p, s, r, rs, pb, sb, rb, rsb = map(float, sys.argv[2:16])
rounds = int(sys.argv[16])
def rates(name):  # every field's median over the rounds, and the rates run by run
    runs = [dict(l.split() for l in open(f"{t}/{name}.{r}.txt")) for r in range(1, rounds + 1)]
    med = {k: statistics.median(float(x[k]) for x in runs) for k in ("put0_rate", "put0_cpu_us", "put0_csw")}
    med["runs"] = " ".join(f"{float(x['put0_rate']) / 1e6:.2f}" for x in runs)
    return med
spin = sys.argv[17]
load = open(f"{t}/load.txt").read().strip()
st = json.load(open(f"{t}/stats_n2.json"))["statistics"]
print(f"1 MiB Put bandwidth : ulnet {u:9.1f} MB/s   iperf3 {i:9.1f} MB/s (medians)   ratio {u / i:.2f} (goal >= 0.95)")
print(f"1 MiB Get bandwidth : ulnet {g:9.1f} MB/s   iperf3 {i:9.1f} MB/s (medians)   ratio {g / i:.2f} (goal >= 0.95)")
print(f"  CPU per GiB (both ends, medians): Put {uc:.0f} ms, Get {gc:.0f} ms, iperf3 {ic:.0f} ms")
print(f"round trip (medians): ulnet_ping {p:6.1f} us vs raw TCP ping-pong {r:6.1f} us  ratio {p / r:.2f} (goal <= 2) | "
      f"selftest ping {s:6.1f} us vs raw {rs:6.1f} us  ratio {s / rs:.2f} (goal <= 1.2)")
print(f"  busy polling       : ulnet_ping {pb:6.1f} us vs raw TCP ping-pong {rb:6.1f} us  ratio {pb / rb:.2f} (goal <= 1.5) | "
      f"selftest ping {sb:6.1f} us vs raw {rsb:6.1f} us  ratio {sb / rsb:.2f} (goal <= 1.05)")
print(f"0-byte Put rate (medians; goal >= 1 M msg/s with 2 loops; one peer, so one loop does the work; load average {load}):")
for pc in ("8", "64"):
    for sp in ("0", spin):
        a, b = rates(f"rate1_{pc}_{sp}"), rates(f"rate2_{pc}_{sp}")
        r1, r2 = a['put0_rate'], b['put0_rate']
        who = "API thread sleeps" if sp == "0" else f"API thread polls {sp} us"
        print(f"  peer_credits {pc:>2}{' (default)' if pc == '8' else ''}, {who}: {r1:9.0f} msg/s (1 loop per node) | "
              f"{r2:9.0f} msg/s (2 loops per node)  ratio {r2 / r1:.2f}")
        print(f"    runs (M msg/s): 1 loop {a['runs']} | 2 loops {b['runs']}; per Put (process CPU time, context switches): "
              f"{a['put0_cpu_us']:.2f} us, {a['put0_csw']:.3f} | {b['put0_cpu_us']:.2f} us, {b['put0_csw']:.3f}")
h = st["lock_hold_us"]
tot = sum(h.values())
print(f"node lock hold times (server node, whole run; {tot} holds, longest {st['lock_hold_max_ns'] / 1000:.1f} us):")
for k, n in h.items():
    if n:
        print(f"  {k:>8} us {n:10d}  {'#' * max(1, round(50 * n / tot))}")
print(f"descriptors: {st['desc_gets']} handed out, {st['desc_heap_allocs']} from the heap")
PY
