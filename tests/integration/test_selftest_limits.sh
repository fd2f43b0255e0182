#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 13, "remote console limits": an unauthenticated console (sst_hostile_console.py, written apart
# from ulnet's code) asks a node for a 49-day client RPC timeout, a client test of concurrency 1024 x
# 1 MiB, and 1025 tests in one session. The node refuses each past its limit with a status and (ulnet
# extension) the limit's code, and logs one line with the values. A ulnet console shows the limit in
# its error line (exit 3), and the client memory limit counts every test of the session. Holding the
# 1024 tests, the node idles: all its threads sleep.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 204
sst_node n1 204 1 4096 "{server_rpc_timeout_ms: 3000}"
sst_node n2 204 2 65536
N1=$(ul_addr 204 1)@tcp
N2=$(ul_addr 204 2)@tcp

ul_step "a hostile remote console"
"$UL_PYTHON" "$SRC/tests/integration/sst_hostile_console.py" "$(ul_addr 204 5)" "$(ul_addr 204 1)" \
	> "$UL_TMP/h.json" 2> "$UL_TMP/h.err" || ul_fail "hostile console: $(cat "$UL_TMP/h.err")"
cat "$UL_TMP/h.json" >&2
U=$((0x554c4e54))
ul_json "$UL_TMP/h.json" "j['mksn'] == 0 and j['timeout'] == [22, $U, 2] and j['memory'] == [12, $U, 3] and j['tests_ok'] == 1024 and j['tests_last'] == [28, $U, 1]"
for re in "refused: RPC timeout 4233600000 ms, limit 3600000 ms" \
	"refused: client test needs up to [0-9]+ bytes \(concurrency 1024 x 1 destinations\)" \
	"refused: session 'hostile' has 1024 tests, the limit"; do
	grep -Eq "$re" "$(ul_log n1)" || ul_fail "no log line /$re/: $(grep -i refused "$(ul_log n1)" | head -5)"
done
# 1024 idle tests cost no polling: every thread of the node goes to sleep (one spinning never does)
ul_wait_asleep "$(ul_pid n1)" "n1 holding 1024 idle tests"

ul_step "a TEST client entry whose destination list never comes ends at the server deadline"
stat1() { "$SST" --node "$(ul_sock n1)" --json stat > "$UL_TMP/n1.sst" || ul_fail "stat n1"; }
field() { "$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['selftest'][sys.argv[2]])" "$UL_TMP/n1.sst" "$1"; }
stat1; exp0=$(field rpcs_expired)
mkfifo "$UL_TMP/hold"
"$UL_PYTHON" "$SRC/tests/integration/sst_hostile_console.py" "$(ul_addr 204 6)" "$(ul_addr 204 1)" --hold \
	< "$UL_TMP/hold" > "$UL_TMP/hold.out" 2> "$UL_TMP/hold.err" &
HOLD=$!
UL_ATEXIT+=("kill $HOLD")
exec 9> "$UL_TMP/hold"
for i in $(seq 600); do
	stat1
	(( $(field rpcs_expired) > exp0 )) && break
	kill -0 $HOLD 2>/dev/null || ul_fail "held console: $(cat "$UL_TMP/hold.err")"
	sleep 0.05
done
(( $(field rpcs_expired) > exp0 )) || ul_fail "the TEST entry never expired: $(cat "$UL_TMP/n1.sst")"
grep -q "selftest server RPC(s) not done within 3000 ms" "$(ul_log n1)" || ul_fail "no expiry line"
exec 9>&-
wait $HOLD 2>/dev/null
for i in $(seq 600); do stat1; (( $(field server_rpcs) == 0 )) && break; sleep 0.05; done
(( $(field server_rpcs) == 0 )) || ul_fail "the TEST entry's RPC is still held: $(cat "$UL_TMP/n1.sst")"

ul_step "a ulnet console sees the limit; it counts every client test of the session"
export ULNET_NODE
ULNET_NODE=$(ul_sock n2)
lst() { ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$SST" "$@"; }
ok() { lst "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }
ok new_session s1 --force
ok add_group g "$N1"
ok add_batch b
lst add_test --batch b --from g --to g --concurrency 1024 brw write size=1M
[[ $UL_STATUS == 3 ]] || ul_fail "concurrency 1024 x 1 MiB: status $UL_STATUS: $(cat "$UL_TMP/o.err")"
ul_one_line "$UL_TMP/o.err" "out of memory \(status 12\); ulnet node limit: a session's client tests may hold at most 256 MiB"
ok add_test --batch b --from g --to g --concurrency 200 brw write size=1M
lst add_test --batch b --from g --to g --concurrency 100 brw read size=1M
[[ $UL_STATUS == 3 ]] || ul_fail "200 + 100 MiB: status $UL_STATUS: $(cat "$UL_TMP/o.err")"
ul_one_line "$UL_TMP/o.err" "ulnet node limit: a session's client tests may hold at most 256 MiB"
ok add_test --batch b --from g --to g --concurrency 8 brw read size=1M
ok end_session
echo PASS
