#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 12: a console never sends a kernel lnet_selftest client a brw TEST it cannot survive. The
# client here is kernel_sst_client.py, a kernel-like node written apart from ulnet's selftest code: it
# applies the kernel's offset rules and counts every TEST it receives. Unsafe offsets are refused by the
# console (one line with the rule and what would be accepted, exit 2) and the responder receives no
# TEST and no session, only the one DEBUG that asks whether it is ulnet (issue 32); safe ones (offset
# 0, size 1048568 at offset 8) are sent. A ulnet client still takes any offset.
# A node that refuses a TEST makes the console exit 3 ("the node could not run it").
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 200
sst_two_nodes 200 # n1 (console) and n2: ulnet nodes
K=$(ul_addr 200 3)@tcp       # kernel-like client
KREF=$(ul_addr 200 4)@tcp    # kernel-like node that refuses every TEST with EINVAL
start_responder() { sst_py_peer kernel_sst_client.py "$@"; } # ADDR STATE [ARGS...]
count() { "$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
start_responder "$(ul_addr 200 3)" "$UL_TMP/k.json"
start_responder "$(ul_addr 200 4)" "$UL_TMP/kref.json" --refuse-tests 22

export ULNET_NODE
ULNET_NODE=$(ul_sock n1)
lst() { ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$SST" "$@"; }
ok() { lst "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }
refused() # WANT-ACCEPTED ARGS...: exit 2, one line naming the rule, the values and what is accepted
{
	local want=$1
	shift
	lst "$@"
	[[ $UL_STATUS == 2 ]] || ul_fail "'$*': status $UL_STATUS (want 2): $(cat "$UL_TMP/o" "$UL_TMP/o.err")"
	ul_one_line "$UL_TMP/o.err" "multiple of 8 below 4096 .*accepted: $want"
}

ul_step "one-shot runs with a kernel client: unsafe offsets refused before any TEST"
refused "size 1048568 at offset 8, or size 1048576 at offset 0" \
	brw write --from "$K" --to "$N2" --size 1M --offset 8 --count 1
grep -q "brw size 1048576 at offset 8" "$UL_TMP/o.err" || ul_fail "values missing: $(cat "$UL_TMP/o.err")"
refused "size 1048576 at offset 0" brw read --from "$K" --to "$N2" --size 1M --offset 4096 --count 1
refused "size 4088 at offset 8, or size 4096 at offset 0" brw write --from "$K" --to "$N2" --size 4096 --offset 12 --count 1
[[ $(count "$UL_TMP/k.json" tests) == 0 ]] || ul_fail "the responder received a TEST: $(cat "$UL_TMP/k.json")"
# issue 32: to learn whether the client is ulnet, one DEBUG (query session) per refusal and nothing
# else: no session made or removed on it
ul_json "$UL_TMP/k.json" "j['debug'] == 3 and j['mksn'] == 0 and j['rmsn'] == 0 and j['tests'] == 0"
# the safe case goes out (the responder runs no RPCs, so the console reports what it could: exit 0 or 1)
lst brw write --from "$K" --to "$N2" --size 1048568 --offset 8 --count 1
(( UL_STATUS <= 1 )) || ul_fail "size 1048568 at offset 8: status $UL_STATUS: $(cat "$UL_TMP/o.err")"
ul_json "$UL_TMP/k.json" "j['accepted'] == [[1048568, 8]] and j['would_crash'] == 0"
# a safe offset needs no question: no DEBUG before the session
ul_json "$UL_TMP/k.json" "j['debug'] == 3 and j['mksn'] == 1"

ul_step "one-shot run with a ulnet client: the DEBUG reply says ulnet, any offset runs"
ok --json brw write --from "$N2" --to "$N1" --size 1M --offset 8 --count 4
ul_json "$UL_TMP/o" "j['ok'] and j['rpcs'] == 4 and j['offset'] == 8 and j['clients'] == 'remote'"

ul_step "lst style: unsafe refused (nothing sent to anyone), safe sent"
ok new_session s1
ok add_group kern "$K"
ok add_group ul "$N2"
ok add_batch b
refused "size 1048568 at offset 8" add_test --batch b --from kern --to ul brw write size=1M off=8
refused "size 65536 at offset 0" add_test --batch b --from kern --to ul brw read size=64k off=4104
[[ $(count "$UL_TMP/k.json" tests) == 1 ]] || ul_fail "the responder received a TEST: $(cat "$UL_TMP/k.json")"
ok add_test --batch b --from kern --to ul brw write size=1048568 off=8 check=full
ok add_test --batch b --from kern --to ul brw read size=1M off=0
ok add_test --batch b --from ul --to kern brw write size=1M off=8 # kern is the server: offset 0 there
ul_json "$UL_TMP/k.json" "j['client_tests'] == 3 and j['server_tests'] == 1 and j['accepted'] == [[1048568, 8], [1048568, 8], [1048576, 0]] and j['would_crash'] == 0 and j['unaligned_refused'] == 0"

ul_step "a ulnet client takes any offset"
ok add_test --batch b --from ul --to ul brw write size=1M off=8
ok add_test --batch b --from ul --to ul brw write size=1M off=4097
ok end_session

ul_step "a node that refuses a TEST: exit 3 and a line naming it"
lst brw write --from "$KREF" --to "$N2" --size 4096 --count 1
[[ $UL_STATUS == 3 ]] || ul_fail "refused TEST: status $UL_STATUS (want 3): $(cat "$UL_TMP/o.err")"
ul_one_line "$UL_TMP/o.err" "$KREF.*invalid request \(status 22\)"
ok new_session s2
ok add_group kref "$KREF"
ok add_group ul "$N2"
ok add_batch b
lst add_test --batch b --from kref --to ul brw write size=4096
[[ $UL_STATUS == 3 ]] || ul_fail "lst refused TEST: status $UL_STATUS (want 3): $(cat "$UL_TMP/o.err")"
ul_one_line "$UL_TMP/o.err" "$KREF.*invalid request \(status 22\)"
ok end_session
[[ $(count "$UL_TMP/k.json" would_crash) == 0 ]] || ul_fail "an unsafe TEST was sent: $(cat "$UL_TMP/k.json")"
echo "PASS"
