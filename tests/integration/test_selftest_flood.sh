#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 13, "unbounded server RPCs" and server deadlines: a hostile peer (sst_flood.py) sends 4 brw
# WRITE requests and 400 brw READ requests (1 MiB each) and never reads a byte. The node serves at most
# one RPC per posted request buffer and at most 32 MiB of server bulk at once (the rest wait, holding
# only their buffer): its peak RSS is printed and must stay under 64 MiB, and it keeps answering
# another peer. Server RPCs that make no progress end at their deadline (4 s here: the config
# file's selftest: server_rpc_timeout_ms) with one log line; once the peer is gone the waiting requests are gone
# and the READ bulk is freed.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 203
sst_node n1 203 1 4096 "{server_rpc_timeout_ms: 4000}"
sst_node n2 203 2 4096
N1=$(ul_addr 203 1)@tcp
N2=$(ul_addr 203 2)@tcp
stat1() { "$SST" --node "$(ul_sock n1)" --json stat > "$UL_TMP/n1.sst" || ul_fail "stat n1"; }
field() { "$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['selftest'][sys.argv[2]])" "$UL_TMP/n1.sst" "$1"; }
wait_for() # DESCRIPTION CONDITION (shell arithmetic on fields, e.g. '$(field x) > 0'), at most 30 s
{
	local what=$1 cond=$2 i
	for i in $(seq 600); do
		stat1
		eval "(( $cond ))" && return 0
		sleep 0.05
	done
	ul_fail "$what: $(cat "$UL_TMP/n1.sst")"
}
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$(ul_pid n1)/status"; }
# ThreadSanitizer shadows every touched byte several times over: there only the node's own bulk
# accounting is checked, not its RSS
RSS_LIMIT_KB=$(( 64 * 1024 ))
grep -qa __tsan_init "$ULNETD" && RSS_LIMIT_KB=$(( 1 << 30 ))

ul_step "flood: 4 brw WRITE + 400 brw READ requests from a peer that never reads"
mkfifo "$UL_TMP/hold"
"$UL_PYTHON" "$SRC/tests/integration/sst_flood.py" "$(ul_addr 203 5)" "$(ul_addr 203 1)" 400 4 \
	< "$UL_TMP/hold" > "$UL_TMP/flood.out" 2> "$UL_TMP/flood.err" &
FLOOD=$!
UL_ATEXIT+=("kill $FLOOD")
exec 9> "$UL_TMP/hold"
for i in $(seq 600); do grep -q sent "$UL_TMP/flood.out" && break; kill -0 $FLOOD || break; sleep 0.05; done
grep -q sent "$UL_TMP/flood.out" || ul_fail "flooder: $(cat "$UL_TMP/flood.err")"
wait_for "requests waiting for bulk memory" '$(field server_waiting) > 0'
(( $(field server_bulk_bytes) <= 32 << 20 )) || ul_fail "server bulk $(field server_bulk_bytes) bytes > 32 MiB"
(( $(field server_rpcs) <= 256 + 16 * 6 )) || ul_fail "server RPCs $(field server_rpcs): more than posted buffers"

ul_step "the node answers another peer during the flood"
ul_run "$UL_TMP/p" "$UL_TMP/p.err" timeout 60 "$SST" --node "$(ul_sock n2)" --json ping --from "$N2" --to "$N1" --count 20
[[ $UL_STATUS == 0 ]] || ul_fail "selftest ping during the flood: status $UL_STATUS: $(cat "$UL_TMP/p" "$UL_TMP/p.err")"
ul_json "$UL_TMP/p" "j['ok'] and j['rpcs'] == 20"

ul_step "server deadlines: the unanswered WRITE GETs and the stuck READs end"
wait_for "server RPCs expired" '$(field rpcs_expired) >= 4'
grep -q "selftest server RPC(s) not done within 4000 ms" "$(ul_log n1)" || ul_fail "no expiry line in the log"
hwm=$(hwm_kb)
echo "ulnetd peak RSS under the flood: $(( hwm / 1024 )) MiB ($hwm kB); server bulk now $(field server_bulk_bytes) bytes" >&2
(( hwm < RSS_LIMIT_KB )) || ul_fail "peak RSS $hwm kB >= $RSS_LIMIT_KB kB"

ul_step "the peer leaves: nothing waits, the READ bulk is freed"
exec 9>&-
wait $FLOOD 2>/dev/null
# the 4 WRITE bulks stay until the core times out their GETs (LNet transaction timeout)
wait_for "server RPCs after the peer left" '$(field server_waiting) == 0 && $(field server_rpcs) <= 4 && $(field server_bulk_bytes) <= 4 << 20'
echo "after the peer left: $(field server_rpcs) server RPC(s), $(field server_bulk_bytes) bulk bytes" >&2
ul_run "$UL_TMP/b" "$UL_TMP/b.err" timeout 60 "$SST" --node "$(ul_sock n2)" --json brw write --from "$N2" --to "$N1" --size 1M --count 20
[[ $UL_STATUS == 0 ]] || ul_fail "brw after the flood: status $UL_STATUS: $(cat "$UL_TMP/b" "$UL_TMP/b.err")"
(( $(hwm_kb) < RSS_LIMIT_KB )) || ul_fail "peak RSS $(hwm_kb) kB >= $RSS_LIMIT_KB kB"
echo PASS
