#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# brw read and write between two ulnetd (4 KiB and 64 KiB pages), both directions, sizes 1, 4095,
# 4097, 65535 and 1 MiB at offsets 0, 1, 4095, 4097 and 65537 (where offset + size <= 1 MiB),
# check=full: every run must report zero errors. Then ping; then the same driven from a third node's
# console (remote --from, over lnet_selftest's framework RPCs), including a client node that only
# gives lnet_selftest's counters (latency must read n/a, never a made-up number).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 40
sst_two_nodes 40

sst_brw_matrix n1 "$N1" n2 "$N2" "1 4095 4097 65535 1048576" "0 1 4095 4097 65537"
ul_step "$SST_BRW_RUNS brw runs clean"

ul_step "json keys and direction"
ul_run "$UL_TMP/w.json" "$UL_TMP/w.err" "$SST" --node "$(ul_sock n1)" --json brw write --from "$N1" --to "$N2" \
	--size 1M --offset 4097 --concurrency 8 --duration 1 --check full
[[ $UL_STATUS == 0 ]] || ul_fail "1 s write: $(cat "$UL_TMP/w.json" "$UL_TMP/w.err")"
ul_json "$UL_TMP/w.json" "j['test'] == 'brw write' and j['direction'] == 'client\u2192server' and set(j['latency_us']) == {'p50', 'p99', 'max'} and j['MBps'] > 0 and abs(j['MiBps'] * 1048576 - j['MBps'] * 1e6) < 1e6 and j['rate'] > 0"
ul_run "$UL_TMP/r.txt" "$UL_TMP/r.err" "$SST" --node "$(ul_sock n2)" brw read --from "$N2" --to "$N1" \
	--size 65535 --offset 1 --duration 1
[[ $UL_STATUS == 0 ]] || ul_fail "1 s read: $(cat "$UL_TMP/r.txt" "$UL_TMP/r.err")"
ul_one_line "$UL_TMP/r.txt" 'server→client.*MB/s \(.*MiB/s\).*msg/s.*p50.*p99.*max.*timeout 0, mismatch 0, refused 0, peer gone 0: ok$'
grep -q $'\r' "$UL_TMP/r.txt" && ul_fail "progress line written to a non-terminal"

ul_step "ping"
ul_run "$UL_TMP/p.json" "$UL_TMP/p.err" "$SST" --node "$(ul_sock n1)" --json ping --from "$N1" --to "$N2" --count 50
[[ $UL_STATUS == 0 ]] || ul_fail "ping: $(cat "$UL_TMP/p.json" "$UL_TMP/p.err")"
ul_json "$UL_TMP/p.json" "j['ok'] and j['rpcs'] == 50"

ul_step "remote --from: the console on n3 drives n1 and n2 over the framework RPCs"
sst_node n3 40 3 4096
N3=$(ul_addr 40 3)@tcp
runs=0
for dir in "$N1 $N2" "$N2 $N1"; do
	read -r from to <<<"$dir"
	for rw in write read; do
		for size in 1 4097 1048576; do
			for off in 0 4097 65537; do
				(( off + size <= 1048576 )) || continue
				sst_run "$UL_TMP/rb.json" n3 --json brw "$rw" --from "$from" --to "$to" --size "$size" \
					--offset "$off" --check full --concurrency 2 --count 4 --timeout 10
				[[ $UL_STATUS == 0 ]] || ul_fail "remote brw $rw $from->$to size $size off $off: status $UL_STATUS: $(cat "$UL_TMP/rb.json" "$UL_TMP/rb.json.err")"
				ul_json "$UL_TMP/rb.json" "j['ok'] and j['clients'] == 'remote' and j['rpcs'] == 4 and j['bytes'] == 4 * $size and j['latency_us']['max'] is not None and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
				runs=$((runs + 1))
			done
		done
	done
done
ul_step "$runs remote brw runs clean"
sst_run "$UL_TMP/rt.txt" n3 brw write --from "$N2" --to "$N1" --size 1M --offset 4097 --concurrency 4 --duration 1
[[ $UL_STATUS == 0 ]] || ul_fail "remote 1 s write: $(cat "$UL_TMP/rt.txt" "$UL_TMP/rt.txt.err")"
grep -q "^brw write $N2 → $N1 (client→server).*MB/s (.*MiB/s).*latency p50.*: ok$" "$UL_TMP/rt.txt" || ul_fail "remote line: $(cat "$UL_TMP/rt.txt")"
grep -q 'remote clients: measured on the client node' "$UL_TMP/rt.txt" || ul_fail "no source: $(cat "$UL_TMP/rt.txt")"
sst_run "$UL_TMP/rp.json" n3 --json ping --from "$N1" --to "$N2" --count 20
[[ $UL_STATUS == 0 ]] || ul_fail "remote ping: $(cat "$UL_TMP/rp.json" "$UL_TMP/rp.json.err")"
ul_json "$UL_TMP/rp.json" "j['ok'] and j['rpcs'] == 20 and j['direction'] == 'client\u2194server'"
# the console node itself as the server of a remote client
sst_run "$UL_TMP/rs.json" n3 --json brw read --from "$N2" --to "$N3" --size 65535 --offset 1 --count 4
[[ $UL_STATUS == 0 ]] || ul_fail "remote client, console as server: $(cat "$UL_TMP/rs.json" "$UL_TMP/rs.json.err")"
ul_json "$UL_TMP/rs.json" "j['ok'] and j['rpcs'] == 4"

ul_step "remote client that gives only lnet_selftest counters (kernel stand-in): no made-up latency"
sst_node k4 40 4 4096 "{kernel_stats: true}"
K4=$(ul_addr 40 4)@tcp
sst_run "$UL_TMP/k.txt" n3 brw write --from "$K4" --to "$N2" --size 1M --offset 8 --concurrency 2 --duration 1
[[ $UL_STATUS == 0 ]] || ul_fail "counter-only client: $(cat "$UL_TMP/k.txt" "$UL_TMP/k.txt.err")"
grep -q 'latency n/a (remote clients).*: ok$' "$UL_TMP/k.txt" || ul_fail "no n/a latency: $(cat "$UL_TMP/k.txt")"
sst_run "$UL_TMP/k.json" n3 --json brw read --from "$K4" --to "$N1" --size 4096 --count 8 --concurrency 2
[[ $UL_STATUS == 0 ]] || ul_fail "counter-only client json: $(cat "$UL_TMP/k.json" "$UL_TMP/k.json.err")"
ul_json "$UL_TMP/k.json" "j['ok'] and j['latency_us'] == {'p50': None, 'p99': None, 'max': None} and j['rpcs'] == 8 and j['bytes'] == 8 * 4096 and 'counters' in j['source']"

ul_step "bad arguments: usage and exit 2, never a crash"
for args in "" "brw" "brw sideways" "brw write" "brw write --from $N1" "brw write --from $N1 --to $N2 --size 0" \
	"brw write --from $N1 --to $N2 --size 2G" "brw write --from $N1 --to nonsense" \
	"brw write --from $N1 --to $N2 --check maybe" "brw write --from $N1 --to $N2 --concurrency 0" \
	"ping --from $N1 --to $N2 --duration -1" "frobnicate" "brw write --from nonsense --to $N2" \
	"brw write --from $N2 --to $N1 --corrupt-at 5 --corrupt-count 1" "brw read --from $N1 --to $N2 --offset"; do
	# shellcheck disable=SC2086
	ul_run "$UL_TMP/u.out" "$UL_TMP/u.err" "$SST" --node "$(ul_sock n1)" $args
	[[ $UL_STATUS == 2 ]] || ul_fail "'$args': status $UL_STATUS, want 2: $(cat "$UL_TMP/u.err")"
done
exit 0
