#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What observability and fault rules cost the data path (issue 31's goals: latency metrics under 2 %,
# an installed fault rule that matches nothing under 1 %), three modes side by side in one run:
#   base    the default: latency histograms on, no fault rule
#   nolat   latency histograms off (ulnet_metrics_latency_set; ulnetctl set latency_metrics 0)
#   rule    histograms on and one drop rule on each node that matches nothing (source 192.0.2.1@tcp)
# 1. instructions per 0-byte Put (callgrind; deterministic, blind to the machine's load): two nodes
#    in one process (bench/tcp_msgrate), each mode run for 1 s and 3 s under valgrind, the Ir of the
#    difference divided by the Puts of the difference (start-up and teardown cancel out);
# 2. 0-byte Put rate and CPU per Put (bench/tcp_msgrate, one run of each mode in turn, ROUNDS rounds);
# 3. 1 MiB brw write and read between two ulnetd over tcp (ulnet-selftest, concurrency 8), the modes
#    set on both daemons with ulnetctl between runs, in turn, ROUNDS rounds.
# Prints every run, the medians and each mode's ratio to base (rate and bandwidth: mode/base, so
# 0.98 is a 2 % cost; CPU and instructions: mode/base, 1.02 is a 2 % cost). Not part of the tests.
# Usage: bench/observe_cost.sh [SECONDS]  (BUILD=build dir, default ./build; ROUNDS=5;
#        BENCH_T=T uses 127.T.0.0/16, default 219; SKIP_CG=1 skips callgrind; SKIP_BRW=1 skips 3.)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-3}
ROUNDS=${ROUNDS:-5}
T=${BENCH_T:-219}
MODES=(base nolat rule)
source "$SRC/tests/integration/lib.sh"
ul_init
ninja -C "$BUILD" bench/tcp_msgrate >/dev/null
bin=$BUILD/bench/tcp_msgrate
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
A=$(ul_addr "$T" 1) B=$(ul_addr "$T" 2)
mode_env() { # MODE: the environment tcp_msgrate reads
	case $1 in
	base) echo "METRICS_OFF=0 FAULT_NOMATCH=0" ;;
	nolat) echo "METRICS_OFF=1 FAULT_NOMATCH=0" ;;
	rule) echo "METRICS_OFF=0 FAULT_NOMATCH=1" ;;
	esac
}
declare -A res # "measure mode" -> space-separated values

if [[ ${SKIP_CG:-0} != 1 ]] && command -v valgrind >/dev/null; then
	ul_step "1. instructions per 0-byte Put (callgrind, 1 s and 3 s per mode)"
	for m in "${MODES[@]}"; do
		declare -A ir=() cnt=()
		for s in 1 3; do
			env $(mode_env "$m") valgrind --tool=callgrind --callgrind-out-file="$UL_TMP/cg.$m.$s" \
				"$bin" "$A" "$B" "$s" 1 put0 64 0 >"$UL_TMP/cg.$m.$s.out" 2>/dev/null
			cnt[$s]=$(awk '$1 == "put0_count" { print $2 }' "$UL_TMP/cg.$m.$s.out")
			ir[$s]=$(awk '/^summary:/ { print $2 }' "$UL_TMP/cg.$m.$s")
		done
		v=$("$UL_PYTHON" -c 'import sys; a, b, c, d = map(int, sys.argv[1:]); print(f"{(b - a) / (d - c):.1f}")' \
			"${ir[1]}" "${ir[3]}" "${cnt[1]}" "${cnt[3]}")
		echo "  $m: $v Ir per Put (Puts ${cnt[1]} / ${cnt[3]})"
		res["ir $m"]=$v
	done
fi

ul_step "2. 0-byte Put rate, $ROUNDS rounds of ${SECS} s per mode, in turn"
for r in $(seq "$ROUNDS"); do
	for m in "${MODES[@]}"; do
		out=$(env $(mode_env "$m") "$bin" "$A" "$B" "$SECS" 1 put0 64 0 2>/dev/null)
		rate=$(awk '$1 == "put0_rate" { print $2 }' <<<"$out")
		cpu=$(awk '$1 == "put0_cpu_us" { print $2 }' <<<"$out")
		[[ -n $rate && -n $cpu ]] || ul_fail "tcp_msgrate failed in mode $m"
		res["rate $m"]+=" $rate"
		res["cpu $m"]+=" $cpu"
		echo "  round $r $m: put0_rate=$rate put0_cpu_us=$cpu"
	done
done

if [[ ${SKIP_BRW:-0} != 1 ]]; then
	ul_step "3. 1 MiB brw write and read between two ulnetd, $ROUNDS rounds of ${SECS} s per mode"
	for n in 1 2; do
		ul_start_node "n$n" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$T" "$n")@tcp
YAML
	done
	ul_ctl n1 ping "$B@tcp" --count 5 --timeout_ms 5000 >/dev/null || ul_fail "warm-up ping failed"
	set_mode() {
		for n in n1 n2; do
			ul_ctl "$n" set latency_metrics "$([[ $1 == nolat ]] && echo 0 || echo 1)" || ul_fail "set latency_metrics"
			ul_ctl "$n" fault drop del --all >/dev/null 2>&1 || true
			if [[ $1 == rule ]]; then
				ul_ctl "$n" fault drop add --source 192.0.2.1@tcp --rate 1 || ul_fail "fault drop add"
			fi
		done
	}
	for r in $(seq "$ROUNDS"); do
		for m in "${MODES[@]}"; do
			set_mode "$m"
			for op in write read; do
				"$SST" --node "$(ul_sock n1)" --json brw "$op" --from "$A@tcp" --to "$B@tcp" --size 1M \
					--concurrency 8 --check none --duration "$SECS" >"$UL_TMP/brw.json" || ul_fail "brw $op ($m)"
				v=$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["MBps"])' "$UL_TMP/brw.json")
				res["$op $m"]+=" $v"
				echo "  round $r $m: brw $op ${v} MB/s"
			done
		done
	done
	set_mode base
	ul_stop_node n1
	ul_stop_node n2
fi

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in "${!res[@]}"; do echo "$k:${res[$k]}"; done | "$UL_PYTHON" -c '
import statistics, sys
res = {}
for line in sys.stdin:
    k, v = line.split(":", 1)
    res[k] = [float(x) for x in v.split()]
what = [("ir", "instructions per 0-byte Put (callgrind)", "Ir"), ("rate", "0-byte Put rate", "msg/s"),
        ("cpu", "CPU per 0-byte Put", "us"), ("write", "1 MiB brw write", "MB/s"), ("read", "1 MiB brw read", "MB/s")]
for key, name, unit in what:
    if f"{key} base" not in res:
        continue
    base = statistics.median(res[f"{key} base"])
    row = [f"{name}: base {base:.4g} {unit}"]
    for m in ("nolat", "rule"):
        v = statistics.median(res[f"{key} {m}"])
        row.append(f"{m} {v:.4g} (x{v / base:.4f})")
    print("; ".join(row))
print("cost of the latency metrics = base/nolat for rates (nolat/base - 1 in Ir and CPU); of an idle rule = rule/base")
'
