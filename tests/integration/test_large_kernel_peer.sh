#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #33 (docs/large.md): payloads above LNET_MTU toward a kernel-like peer. The peer is
# kernel_sst_server.py, written apart from ulnet's code: its ping reply lacks ulnet's large-payload bit
# (30), as a kernel node's does, and it counts every LNet message that reaches it. A ulnet node
# (tests/integration/large_put.c) that never pinged it starts a Put of 1 MiB + 1 toward it: the call
# returns 0, the core pings the peer, and the Put ends in its SEND event with -EMSGSIZE; a Get of the
# same size, the capability known by then, is refused at the call with -EMSGSIZE. One log line each
# naming the size, LNET_MTU, the peer and the knob; the peer sees the core's ping, then the
# application's, and nothing else. Then ulnet-selftest brw above 1 MiB with
# the peer as server or client, one-shot and lst style: refused with one line naming lst's 1 MiB rule,
# the size, the peer and the knob, exit 2, and the peer gets no session, test entry or brw request.
# Last, a kernel-like client asking the ulnet brw server for 2 MiB: the server's bulk op probes it (the
# core's ping), finds no large bit and the server answers EINVAL with one log line, moving nothing.
# Addresses: 127.233.0.1 (large_put's node), .2 (ulnetd, the console), .3 (kernel-like peer), .4
# (kernel-like client), .99 (probe).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_require_root "its tcp nodes use port 988"
ul_init
sst_require_tcp 233
LARGE_PUT=$BUILD/tests/integration/large_put
[[ -x $LARGE_PUT ]] || ul_fail "no large_put at $LARGE_PUT"
N1=$(ul_addr 233 1)@tcp
K=$(ul_addr 233 3)@tcp
STATE=$UL_TMP/ks.json
sst_py_peer kernel_sst_server.py "$(ul_addr 233 3)" "$STATE"

ul_step "a Put of 1 MiB + 1 toward the peer never pinged: 0, its event -EMSGSIZE (-90); then a Get: -EMSGSIZE at the call"
ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 60 "$LARGE_PUT" "$N1" "$K" 1048577
[[ $UL_STATUS == 0 ]] || ul_fail "large_put: status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"
printf 'put 0\nput-event SEND -90\nget -90\n' >"$UL_TMP/want"
ul_diff "$UL_TMP/want" <(sed '$d' "$UL_TMP/o") "large_put's results"
feats=$(sed -n 's/^features //p' "$UL_TMP/o")
(( (feats & (1 << 30)) == 0 && (feats & 0x1) )) || ul_fail "the peer's ping features $feats: want bit 30 clear"

ul_step "one log line per refusal: the size, LNET_MTU, the peer, and the knob"
grep -v '^large_put' "$UL_TMP/o.err" | grep -E 'over LNET_MTU' >"$UL_TMP/lines" || true
(( $(wc -l <"$UL_TMP/lines") == 2 )) || ul_fail "want two refusal lines: $(cat "$UL_TMP/o.err")"
for op in PUT GET; do
	grep -E "^.*$op of 1048577 bytes (to|from) $K: over LNET_MTU 1048576 .*did not announce large payloads.*nothing( but one ping)? sent.*large_max" \
		"$UL_TMP/lines" >/dev/null || ul_fail "no $op refusal line naming size, limit, peer and knob: $(cat "$UL_TMP/lines")"
done

ul_step "the peer saw the two pings (the core's probe, the application's) and nothing else (no announce, no data)"
ul_json "$STATE" "j['pings'] == 2 and j['lnet_msgs'] == 2 and j['lnet_types'] == {'2': 2} and j['lnet_bytes'] == 0"

ul_step "ulnet-selftest brw of 1 MiB + 1 with the kernel-like node as server or client: refused, exit 2, one line"
sst_node n2 233 2 4096
N2=$(ul_addr 233 2)@tcp
refused() # ROLE ARGS...: exit 2, one line naming lst's rule, the size, the peer and the knob
{
	local role=$1
	shift
	sst_run "$UL_TMP/r" n2 "$@"
	[[ $UL_STATUS == 2 ]] || ul_fail "'$*': status $UL_STATUS, want 2: $(cat "$UL_TMP/r" "$UL_TMP/r.err")"
	ul_one_line "$UL_TMP/r.err" "brw size 1048577 is above lst's 1048576 bytes per RPC \(LNET_MTU\).*large_max: $role $K is not known to be a ulnet node"
}
refused server brw write --from "$N2" --to "$K" --size 1048577 --count 1
refused server brw read --from "$N2" --to "$K" --size 1048577 --check full --count 1
refused client brw read --from "$K" --to "$N2" --size 1048577 --count 1
# each one-shot refusal asked the peer once (lst's session query, DEBUG), nothing more
ul_json "$STATE" "j['debug'] == 3 and j['mksn'] == 0 and j['server_tests'] == [] and j['client_tests'] == 0 and j['brw'] == 0"

ul_step "lst style: the kernel-like node in the server group, then in the client group: add_test refused"
sst_run "$UL_TMP/o" n2 new_session k && sst_run "$UL_TMP/o" n2 add_group c "$N2" && sst_run "$UL_TMP/o" n2 add_group k "$K" &&
	sst_run "$UL_TMP/o" n2 add_batch b || ul_fail "lst setup: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"
refused server add_test --batch b --from c --to k brw write size=1048577
refused client add_test --batch b --from k --to c brw read size=1048577
sst_run "$UL_TMP/o" n2 end_session || ul_fail "end_session: $(cat "$UL_TMP/o.err")"
# it joined the session (add_group) and left it; no test entry, no brw request
ul_json "$STATE" "j['mksn'] == 1 and j['rmsn'] == 1 and j['server_tests'] == [] and j['client_tests'] == 0 and j['brw'] == 0"

ul_step "a kernel-like client asks the ulnet brw server for 2 MiB, twice: pinged once, answered EINVAL, no bulk"
KC=$UL_TMP/kc.json
sst_py_peer kernel_sst_server.py "$(ul_addr 233 4)" "$KC" "$(ul_addr 233 2)" 2097152 2
deadline=$(( $(ul__now_ms) + 30000 ))
until "$UL_PYTHON" -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['brw_replies'] < 2)" "$KC"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "no brw reply: $(cat "$KC" "$KC.err")"
	sleep 0.05
done
# one ping (the core's probe, a GET; the second request found the client known) and the replies
# (PUTs): no announce, no bulk
ul_json "$KC" "j['brw_reply_status'] == 22 and j['pings'] == 1 and j['lnet_types'] == {'2': 1, '1': 2}"
grep -q "brw of 2097152 bytes from $(ul_addr 233 4)@tcp refused: above LNET_MTU 1048576, and the client did not announce large payloads in a ping reply" \
	"$(ul_log n2)" || ul_fail "no refusal line in n2's log: $(tail -5 "$(ul_log n2)")"
echo PASS
