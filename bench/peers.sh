#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnet beside its peers on the same machine, in one run (issue #35; not part of the test suite; root:
# tcp nodes listen on port 988). Every ulnet figure is measured next to the peer's in each of ROUNDS
# interleaved rounds; every run and the medians are printed, ratio = ulnet/peer:
#   1. TCP 1 MiB brw read and write, 8 in flight (ulnet-selftest, --check none as tcp_bench.sh) vs
#      UCX tcp `ucx_perftest -t tag_bw -s 1048576 -O 8` (UCX_TLS=tcp, UCX_NET_DEVICES=lo), with the
#      CPU time per GiB of both ends (ulnetd: schedstat of every thread over the brw; ucx_perftest:
#      getrusage of each end, server and client, over its whole life: set-up and warm-up included);
#   2. TCP 4 KiB brw read, 8 in flight, vs UCX tcp tag_bw 4 KiB (ucx_perftest's default -O), and
#      the CPU per 4 KiB RPC of both ulnetd (per message for UCX, both ends); once between nodes
#      that sleep when idle, once between nodes that busy-poll BUSY_US first (UCX always polls);
#   3. 1 MiB brw read and write over o2ib on the shm provider (two 4 KiB-page nodes, busy_poll_us 100
#      as o2ib_bench.sh) vs `UCX_TLS=shm ucx_perftest -t ucp_put_bw -s 1048576`;
#   4. selftest ping round trip with busy polling (busy_poll_us BUSY_US, as tcp_bench.sh) vs UCT
#      `ucx_perftest -t am_lat -d lo -x tcp`: ucx_perftest prints half the round trip for ping-pong
#      tests (its libperf divides the latency by 2), so the script doubles it;
#   5. 0-byte Put rate over tcp (bench/tcp_msgrate: 1 loop per node, peer_credits 8, the API thread
#      polling EQ_SPIN_US) vs UCT `am_bw` 8 B over tcp (-d lo -x tcp), and the same over o2ib on
#      the shm provider (NET=o2ib, both nodes busy_poll_us 100 as the shm brw pair, the API thread
#      sleeping on its event queue: with both loops polling, a third spinning thread on 2 cores
#      only takes turns from them) vs UCT `am_bw` 8 B over shm (-d memory -x posix), with the
#      kernel's 8 peer credits and with 64, the entries of UCX's posix FIFO (UCX_POSIX_FIFO_SIZE).
# Then one table: measure | ulnet | peer | ratio | goal (issue #35), and what is unfair in each row.
# ucx_perftest runs as a server (no target) and a client (`ucx_perftest 127.229.0.1 -p PORT -t ...`);
# it has no duration option, so each test is calibrated once (a short run) to last about SECONDS.
# The peers are installed on demand from Debian (ucx-utils). The load average is printed.
# Usage: bench/peers.sh [SECONDS]   (default 3; BUILD=build dir, default ./build; ROUNDS=3;
#        BENCH_T=229: every address in 127.T.0.0/16; BUSY_US=50; EQ_SPIN_US=20; UCX_PORT=24000)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-3}
ROUNDS=${ROUNDS:-3}
BUSY_US=${BUSY_US:-50}
EQ_SPIN_US=${EQ_SPIN_US:-20}
UCX_PORT=${UCX_PORT:-24000}
T=${BENCH_T:-229}
source "$SRC/tests/integration/lib.sh"
ul_require_root "tcp nodes listen on port 988"
ul_init
source "$SRC/bench/bench_lib.sh"
ucx_install
grep -q ULNET_HAVE_FABRIC_SHM "$BUILD/src/util/config.h" || ul_fail "$BUILD was configured with -Dfabric_shm=disabled"
ninja -C "$BUILD" bench/tcp_msgrate >/dev/null && cp "$BUILD/bench/tcp_msgrate" "$UL_TMP/tcp_msgrate"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
A=$(ul_addr "$T" 1) B=$(ul_addr "$T" 2) A3=$(ul_addr "$T" 3) B4=$(ul_addr "$T" 4)

# getrusage of a child: run CMD, write its user+system CPU seconds (itself and what it waited for)
# to FILE, exit with its status
cat >"$UL_TMP/cpu_of.py" <<'PY'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{ru.ru_utime + ru.ru_stime}\n")
sys.exit(rc)
PY

# ucx NAME ITERS ENV... -- ARGS...: one ucx_perftest test, server and client, both with ENV; ARGS for
# the client. Leaves in $UL_TMP/NAME.ucx the Final line's fields (iterations, p50 latency us,
# average and overall overhead us, average and overall MiB/s, average and overall msg/s) and the two
# ends' CPU seconds (server then client) at its end.
ucx() {
	local name=$1 n=$2 env=() srv i port=$UCX_PORT w
	shift 2
	while [[ $1 != -- ]]; do env+=("$1"); shift; done
	shift
	UCX_PORT=$((UCX_PORT + 1))
	w=$((n / 10 + 1))
	env "${env[@]}" "$UL_PYTHON" "$UL_TMP/cpu_of.py" "$UL_TMP/srv.cpu" ucx_perftest -p "$port" \
		>"$UL_TMP/ucx_srv.log" 2>&1 &
	srv=$!
	for i in $(seq 100); do ss -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.05; done
	env "${env[@]}" "$UL_PYTHON" "$UL_TMP/cpu_of.py" "$UL_TMP/cli.cpu" ucx_perftest "$A" -p "$port" -f \
		-n "$n" -w "$w" "$@" >"$UL_TMP/ucx_cli.log" 2>&1 ||
		{ kill "$srv" 2>/dev/null; ul_fail "ucx_perftest ${env[*]} $* (port $port): $(cat "$UL_TMP/ucx_cli.log" "$UL_TMP/ucx_srv.log")"; }
	wait "$srv" || ul_fail "ucx_perftest server ${env[*]} $*: $(cat "$UL_TMP/ucx_srv.log")"
	{ awk '$1 ~ /^[0-9]+$/ && NF == 8' "$UL_TMP/ucx_cli.log" | tail -1 | tr '\n' ' '; cat "$UL_TMP/srv.cpu" "$UL_TMP/cli.cpu" | tr '\n' ' '; echo; } \
		>"$UL_TMP/$name.ucx"
	[[ $(wc -w <"$UL_TMP/$name.ucx") == 10 ]] || ul_fail "ucx_perftest ${env[*]} $*: no result line in $(cat "$UL_TMP/ucx_cli.log")"
}
ucx_field() { awk -v f="$2" '{ print $f }' "$UL_TMP/$1.ucx"; } # NAME FIELD (1-based, as listed above)
# every ucx test: NAME, the iterations of its calibration run, its environment and client arguments
declare -A UCX_ENV=(
	[tag1m]="UCX_TLS=tcp UCX_NET_DEVICES=lo" [tag4k]="UCX_TLS=tcp UCX_NET_DEVICES=lo" [shmput]="UCX_TLS=shm"
	[amlat]="" [ambw_tcp]="" [ambw_shm]=""
)
declare -A UCX_ARGS=(
	[tag1m]="-t tag_bw -s 1048576 -O 8" [tag4k]="-t tag_bw -s 4096" [shmput]="-t ucp_put_bw -s 1048576"
	[amlat]="-t am_lat -d lo -x tcp" [ambw_tcp]="-t am_bw -d lo -x tcp -s 8" [ambw_shm]="-t am_bw -d memory -x posix -s 8"
)
declare -A UCX_CAL=([tag1m]=500 [tag4k]=20000 [shmput]=2000 [amlat]=10000 [ambw_tcp]=20000 [ambw_shm]=200000)
declare -A UCX_N=()
run_ucx() { # NAME [ITERS]
	# shellcheck disable=SC2086 # the lists above are words
	ucx "$1" "${2:-${UCX_N[$1]}}" ${UCX_ENV[$1]} -- ${UCX_ARGS[$1]}
}
ul_step "calibrating ucx_perftest iterations to about ${SECS} s a test"
for k in tag1m tag4k shmput amlat ambw_tcp ambw_shm; do
	run_ucx "$k" "${UCX_CAL[$k]}"
	# overall msg/s (am_lat: iterations/s are round trips, 1 / (2 x the printed one-way latency))
	if [[ $k == amlat ]]; then
		UCX_N[$k]=$(awk -v s="$SECS" '{ printf "%d", s * 1e6 / (2 * $4) }' "$UL_TMP/$k.ucx")
	else
		UCX_N[$k]=$(awk -v s="$SECS" '{ printf "%d", s * $8 }' "$UL_TMP/$k.ucx")
	fi
	ul_step "  $k: ${UCX_N[$k]} iterations"
done

# ulnet: a tcp pair sleeping between messages (n1, n2), a tcp pair busy polling (n3, n4), an o2ib
# pair on the shm provider (s5, s6: 4 KiB pages, busy_poll_us 100 as o2ib_bench.sh)
start_nodes 0 1
start_nodes "$BUSY_US" 3
UL_BUSY_POLL_US=100 ul_o2ib_node s5 "$T" 5 4096 10
UL_BUSY_POLL_US=100 ul_o2ib_node s6 "$T" 6 4096 10
# brw NODE_FROM NODE_TO FROM_NID TO_NID DIR SIZE: MB/s; CPU ms per GiB of both nodes to $UL_TMP/brw.cpu,
# CPU us per RPC to $UL_TMP/brw.rpc
brw() {
	local c0 c1
	c0=$(nodes_cpu_ns "$1" "$2")
	"$SST" --node "$(ul_sock "$1")" --json brw "$5" --from "$3" --to "$4" --size "$6" --concurrency 8 \
		--check none --duration "$SECS" >"$UL_TMP/brw.json" 2>"$UL_TMP/brw.err" ||
		ul_fail "brw $5 $6 $3 -> $4: $(cat "$UL_TMP/brw.json" "$UL_TMP/brw.err")"
	c1=$(nodes_cpu_ns "$1" "$2")
	"$UL_PYTHON" - "$UL_TMP/brw.json" "$c0" "$c1" <<'PY' >"$UL_TMP/brw.cost"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["rpcs"] and j["bytes"], j
ns = int(sys.argv[3]) - int(sys.argv[2])
print(f"{ns / 1e6 / (j['bytes'] / 2**30):.1f} {ns / 1e3 / j['rpcs']:.2f}")
PY
	mbps "$UL_TMP/brw.json"
}
cost() { awk -v f="$1" '{ print $f }' "$UL_TMP/brw.cost"; } # 1: CPU ms/GiB, 2: CPU us/RPC
# UCX figures from a result: MB/s (ucx_perftest prints MiB/s), CPU ms per GiB and us per message
ucx_mbps() { awk '{ printf "%.1f", $6 * 1.048576 }' "$UL_TMP/$1.ucx"; }
ucx_cpu_gib() { awk -v s="$2" '{ printf "%.1f", ($9 + $10) * 1e3 / ($1 * 1.1 * s / 2^30) }' "$UL_TMP/$1.ucx"; } # iterations + 10 % warm-up
ucx_cpu_msg() { awk '{ printf "%.2f", ($9 + $10) * 1e6 / ($1 * 1.1) }' "$UL_TMP/$1.ucx"; }

r1r=() r1w=() c1r=() c1w=() u1=() uc1=() r4=() c4=() r4b=() c4b=() u4=() uc4=() srd=() swr=() us=() png=() pmean=()
ulat=() ulat1=() prt=() uamt=() prs=() prs64=() uams=()
# shm_rate PEER_CREDITS: 0-byte Puts a second over o2ib on the shm provider
shm_rate() {
	NET=o2ib BUSY_POLL_US=100 "$UL_TMP/tcp_msgrate" "$(ul_addr "$T" 7)" "$(ul_addr "$T" 8)" "$SECS" 1 put0 "$1" 0 \
		>"$UL_TMP/rate.txt" 2>"$UL_TMP/rate.err" || ul_fail "tcp_msgrate NET=o2ib peer_credits $1: $(cat "$UL_TMP/rate.err")"
	awk '$1 == "put0_rate" { print $2 }' "$UL_TMP/rate.txt"
}
for r in $(seq "$ROUNDS"); do
	ul_step "round $r/$ROUNDS (${SECS} s a test; load $(cut -d' ' -f1 /proc/loadavg)): TCP 1 MiB brw read, UCX tag_bw, brw write"
	r1r+=("$(brw n1 n2 "$A@tcp" "$B@tcp" read 1M)") c1r+=("$(cost 1)")
	run_ucx tag1m
	u1+=("$(ucx_mbps tag1m)") uc1+=("$(ucx_cpu_gib tag1m 1048576)")
	r1w+=("$(brw n1 n2 "$A@tcp" "$B@tcp" write 1M)") c1w+=("$(cost 1)")
	ul_step "round $r/$ROUNDS: TCP 4 KiB brw read (nodes sleeping), UCX tag_bw 4 KiB, brw read (nodes polling)"
	r4+=("$(brw n1 n2 "$A@tcp" "$B@tcp" read 4K)") c4+=("$(cost 2)")
	run_ucx tag4k
	u4+=("$(ucx_mbps tag4k)") uc4+=("$(ucx_cpu_msg tag4k)")
	r4b+=("$(brw n3 n4 "$A3@tcp" "$B4@tcp" read 4K)") c4b+=("$(cost 2)")
	ul_step "round $r/$ROUNDS: o2ib/shm 1 MiB brw read, UCX shm ucp_put_bw, brw write"
	srd+=("$(brw s5 s6 "$(ul_addr "$T" 5)@o2ib" "$(ul_addr "$T" 6)@o2ib" read 1M)")
	run_ucx shmput
	us+=("$(ucx_mbps shmput)")
	swr+=("$(brw s5 s6 "$(ul_addr "$T" 5)@o2ib" "$(ul_addr "$T" 6)@o2ib" write 1M)")
	ul_step "round $r/$ROUNDS: busy-polling selftest ping, UCT am_lat tcp"
	png+=("$(sst_ping_us n3 "$A3@tcp" "$B4@tcp")")
	pmean+=("$("$UL_PYTHON" -c 'import json,sys; print("%.2f" % (1e6 / json.load(open(sys.argv[1]))["rate"]))' "$UL_TMP/sst_ping.json")")
	run_ucx amlat
	ulat1+=("$(ucx_field amlat 2)") ulat+=("$(awk '{ printf "%.3f", 2 * $2 }' "$UL_TMP/amlat.ucx")")
	ul_step "round $r/$ROUNDS: 0-byte Put rate tcp, UCT am_bw 8 B tcp, 0-byte Put rate o2ib/shm, UCT am_bw 8 B shm"
	"$UL_TMP/tcp_msgrate" "$(ul_addr "$T" 7)" "$(ul_addr "$T" 8)" "$SECS" 1 put0 8 "$EQ_SPIN_US" >"$UL_TMP/rate.txt" 2>"$UL_TMP/rate.err" ||
		ul_fail "tcp_msgrate: $(cat "$UL_TMP/rate.err")"
	prt+=("$(awk '$1 == "put0_rate" { print $2 }' "$UL_TMP/rate.txt")")
	run_ucx ambw_tcp
	uamt+=("$(ucx_field ambw_tcp 8)")
	prs+=("$(shm_rate 8)")
	run_ucx ambw_shm
	uams+=("$(ucx_field ambw_shm 8)")
	prs64+=("$(shm_rate 64)")
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "runs (rounds in order):"
echo "  TCP 1 MiB (MB/s): brw read ${r1r[*]} | brw write ${r1w[*]} | UCX tcp tag_bw -O 8 ${u1[*]}"
echo "  TCP 1 MiB (CPU ms per GiB, both ends): brw read ${c1r[*]} | brw write ${c1w[*]} | UCX tag_bw ${uc1[*]}"
echo "  TCP 4 KiB (MB/s): brw read ${r4[*]} | UCX tcp tag_bw ${u4[*]} | brw read, nodes polling ${r4b[*]}"
echo "  TCP 4 KiB (CPU us, both ends): per brw RPC ${c4[*]} | per UCX message ${uc4[*]} | per brw RPC, nodes polling ${c4b[*]}"
echo "  shm 1 MiB (MB/s): brw read over o2ib ${srd[*]} | brw write ${swr[*]} | UCX shm ucp_put_bw ${us[*]}"
echo "  round trip (us): selftest ping p50 (busy_poll_us $BUSY_US) ${png[*]} (mean ${pmean[*]}) |" \
	"UCT am_lat tcp as printed (one way) ${ulat1[*]}, doubled ${ulat[*]}"
echo "  message rate (msg/s): ulnet 0-byte Put tcp ${prt[*]} | UCT am_bw 8 B tcp ${uamt[*]} | ulnet 0-byte Put o2ib/shm ${prs[*]} | UCT am_bw 8 B shm ${uams[*]} | ulnet o2ib/shm, peer_credits 64 ${prs64[*]}"
echo "  ucx_perftest iterations per test: $(for k in "${!UCX_N[@]}"; do printf '%s %s; ' "$k" "${UCX_N[$k]}"; done)"
echo "load average (1/5/15 min): $load0 at the start, $load1 at the end; $(nproc) CPUs"

"$UL_PYTHON" - "${r1r[*]}" "${r1w[*]}" "${u1[*]}" "${c1r[*]}" "${c1w[*]}" "${uc1[*]}" "${r4[*]}" "${u4[*]}" "${c4[*]}" "${uc4[*]}" \
	"${r4b[*]}" "${c4b[*]}" "${srd[*]}" "${swr[*]}" "${us[*]}" "${png[*]}" "${ulat[*]}" "${prt[*]}" "${uamt[*]}" "${prs[*]}" \
	"${uams[*]}" "${prs64[*]}" "$BUSY_US" "$EQ_SPIN_US" <<'PY'
import statistics, sys
m = [statistics.median(map(float, a.split())) for a in sys.argv[1:23]]
r1r, r1w, u1, c1r, c1w, uc1, r4, u4, c4, uc4, r4b, c4b, srd, swr, us, png, ulat, prt, uamt, prs, uams, prs64 = m
busy, spin = sys.argv[23], sys.argv[24]
rows = [  # measure, ulnet, peer, ulnet value, peer value, higher is better, goal (op, bound) or None
    ("TCP 1 MiB brw read, 8 in flight (MB/s)", "UCX tcp tag_bw -O 8", r1r, u1, True, (">=", 1.0)),
    ("TCP 1 MiB brw write, 8 in flight (MB/s)", "UCX tcp tag_bw -O 8", r1w, u1, True, (">=", 1.0)),
    ("TCP 1 MiB read, CPU ms/GiB both ends", "UCX tag_bw, both ends", c1r, uc1, False, ("<=", 1.0)),
    ("TCP 1 MiB write, CPU ms/GiB both ends", "UCX tag_bw, both ends", c1w, uc1, False, ("<=", 1.0)),
    ("TCP 4 KiB brw read, 8 in flight (MB/s)", "UCX tcp tag_bw 4 KiB", r4, u4, True, (">=", 0.6)),
    ("TCP 4 KiB CPU us per RPC / message", "UCX, both ends", c4, uc4, False, None),
    (f"TCP 4 KiB brw read, nodes polling {busy} us (MB/s)", "UCX tcp tag_bw 4 KiB", r4b, u4, True, (">=", 0.6)),
    (f"TCP 4 KiB CPU us per RPC, nodes polling {busy} us", "UCX, both ends", c4b, uc4, False, None),
    ("shm 1 MiB brw read over o2ib (MB/s)", "UCX shm ucp_put_bw", srd, us, True, (">=", 0.95)),
    ("shm 1 MiB brw write over o2ib (MB/s)", "UCX shm ucp_put_bw", swr, us, True, (">=", 0.95)),
    (f"selftest ping RTT, busy_poll_us {busy} (us)", "UCT am_lat tcp, RTT", png, ulat, False, ("<=", 1.1)),
    (f"0-byte Put rate tcp (msg/s, EQ spin {spin} us)", "UCT am_bw 8 B tcp", prt, uamt, True, (">=", 1.0)),
    ("0-byte Put rate o2ib/shm (msg/s, busy_poll_us 100, peer_credits 8)", "UCT am_bw 8 B shm", prs, uams, True,
     (">=", 0.5)),
    ("same, peer_credits 64 (UCX's FIFO entries)", "UCT am_bw 8 B shm", prs64, uams, True, (">=", 0.5)),
]
print()
print("| measure | ulnet | peer | ratio ulnet/peer | better | goal | met |")
print("|---|---|---|---|---|---|---|")
for name, peer, u, p, hib, goal in rows:
    better = "higher" if hib else "lower"
    g = f"{goal[0]} {goal[1]}" if goal else "<= 4 us per RPC (absolute)"
    ratio = u / p
    if goal:
        met = "yes" if (ratio >= goal[1] if goal[0] == ">=" else ratio <= goal[1]) else "**no**"
    else:
        met = "yes" if u <= 4 else "**no**"
    uf = f"{u:.2f}" if u < 100 else f"{u:.0f}"
    pf = f"{p:.2f}" if p < 100 else f"{p:.0f}"
    print(f"| {name} | {uf} | {peer}: {pf} | {ratio:.2f} | {better} | {g} | {met} |")
PY
cat <<EOF

What is unfair in each comparison:
- TCP 1 MiB: a brw is a request/response RPC (a 160-byte request PUT, the 1 MiB bulk moved by the
  server: PUT for read, GET + REPLY for write, then a 160-byte reply PUT: three LNet messages and a
  round trip per MiB, 8 RPCs in flight); tag_bw streams one-way tagged sends, 8 outstanding, and
  nothing answers each message. ulnet runs two ulnetd daemons (loop threads) driven by a console
  process; each ucx_perftest end is one busy-polling process. UCX's TCP interface is lo's address
  (127.0.0.1: UCX_NET_DEVICES=lo), not 127.$T.0.x (only its out-of-band exchange is).
- TCP 1 MiB CPU: ulnetd's CPU is counted over the brw only (schedstat); ucx_perftest's over each
  end's whole life (getrusage: set-up and 10 % warm-up iterations, which are counted in its bytes),
  and ucx_perftest polls its worker without sleeping, so its CPU grows with wall time, not work.
- TCP 4 KiB: each brw RPC is three LNet messages (request, 4 KiB bulk, reply) with 8 in flight;
  tag_bw sends 4 KiB eager messages with no reply, one outstanding (ucx_perftest's default -O),
  but an eager send completes once copied out, so it streams. CPU: ulnet's per RPC, UCX's per
  message, both ends, UCX's including its polling, set-up and warm-up. ucx_perftest polls all the
  time; the first ulnet pair sleeps when idle (ulnetd's default), the second polls $BUSY_US us
  before it sleeps (node option busy_poll_us), which is the like-for-like row.
- shm 1 MiB: brw over o2ib sends a PUT_REQ/GET_REQ, the RDMA (a memcpy by the shm provider into the
  peer's memfd memory) and a completion message per MiB, plus the selftest request and reply; UCX
  ucp_put_bw is one-sided puts (UCX_TLS=shm: posix/sysv/cma) with no message per put, one
  outstanding (default -O), and the target only progresses. Both reuse one 1 MiB buffer on each side (brw --check none), so both are cache-hot.
- ping: ucx_perftest prints half the round trip for ping-pong tests (libperf's latency_factor 2):
  the table doubles it. am_lat is a UCT 8-byte active message with both processes polling all the
  time; the selftest ping is an RPC (a 160-byte srpc PUT each way, 96-byte headers) through two
  ulnetd that poll for busy_poll_us and then sleep, timed by the console in whole microseconds.
- Put rate tcp: bench/tcp_msgrate runs both nodes in ONE process on the 2 cores (one API thread, 64
  Puts in flight, peer_credits 8, 96 header bytes a Put on the wire, no ACK); UCT am_bw runs two
  processes, 8-byte short AMs (the 8-byte header included), flow-control window 127.
- Put rate o2ib/shm: the same tcp_msgrate over o2ib on the shm provider, both loops polling 100 us
  before they sleep and the API thread sleeping on its event queue (three threads on the 2 cores);
  every Put is an o2iblnd IMMEDIATE message (a ring record with LNet's 96-byte header, matched at
  the target, which then posts an event), and credits come back in NOOPs as the kernel's o2iblnd
  returns them: with 8 peer credits (the kernel's default) at most 8 Puts are in the ring, with
  64 as many as UCX's FIFO holds. UCT am_bw writes 8-byte records into a posix shm FIFO with both
  processes polling, no matching and no event.
EOF
