#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #33 (docs/large.md, docs/selftest.md §6): ulnet-selftest brw above LNET_MTU between ulnet
# nodes, up to their node option large_max, from the one-shot console (the console as client, and a
# remote client) and the lst-style console, data checked; refused before any session or test request
# toward a node that does not take it (large payloads off, or a size past its large_max), with one line
# naming lst's 1 MiB rule (LNET_MTU), the size, the node and the knob, exit 2. The brw server learns
# that its client takes large payloads from the core, whose first large op toward the client pings it
# (peer show says so afterwards).
# Addresses: 127.234.0.1 (4 KiB pages), .2 (64 KiB pages), .3 (large_max 1048576: off).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 234
sst_two_nodes 234
ul_start_node n3 <<YAML
node:
    large_max: 1048576
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 234 3)@tcp
          interfaces: {0: lo}
YAML
N3=$(ul_addr 234 3)@tcp

large() { ul_ctl "$1" peer show --nid "$2" --json | "$UL_PYTHON" -c '
import json, sys
p = json.load(sys.stdin)["peer"]
print(p[0]["large payloads"] if p else "absent")'; }
ok() { sst_run "$UL_TMP/o" n1 "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }
# a one-shot brw: COUNT RPCs of SIZE, all ok, every byte counted, no error
brw() # RW FROM TO SIZE OFFSET CHECK COUNT
{
	ok --json brw "$1" --from "$2" --to "$3" --size "$4" --offset "$5" --check "$6" --count "$7" --concurrency 2
	ul_json "$UL_TMP/o" "j['ok'] and j['rpcs'] == $7 and j['bytes'] == $7 * $4 and j['size'] == $4 and j['offset'] == $5 and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
}
# a refusal: exit 2, one line naming lst's rule, the size, the node and the knob
refused() # NODE_NID SIZE ARGS...
{
	local nid=$1 size=$2
	shift 2
	sst_run "$UL_TMP/r" n1 "$@"
	[[ $UL_STATUS == 2 ]] || ul_fail "'$*': status $UL_STATUS, want 2: $(cat "$UL_TMP/r" "$UL_TMP/r.err")"
	ul_one_line "$UL_TMP/r.err" "brw size $size is above lst's 1048576 bytes per RPC \(LNET_MTU\).*large_max.*$nid"
}

ul_step "before any brw: n2 does not know whether n1 takes large payloads"
[[ $(large n2 "$N1") == absent || $(large n2 "$N1") == unknown ]] || ul_fail "n2 knows n1 already: $(large n2 "$N1")"

ul_step "one-shot, the console as client: 1 MiB + 1 write and read, check full"
brw write "$N1" "$N2" 1048577 0 full 4
brw read "$N1" "$N2" 1048577 0 full 4
# the core pinged the client before the server's first bulk above 1 MiB moved
[[ $(large n2 "$N1") == announced ]] || ul_fail "n2 did not learn n1's large payloads: $(large n2 "$N1")"

ul_step "one-shot: 16 MiB at offset 4097 (odd, past a page), write and read, check full and simple"
brw write "$N1" "$N2" 16777216 4097 full 3
brw read "$N1" "$N2" 16777216 4097 full 3
brw read "$N1" "$N2" 16777216 4097 simple 2

ul_step "one-shot with a remote client (n2, 64 KiB pages) toward the console's node: 16 MiB + 3 at offset 4097"
brw write "$N2" "$N1" $(( 16 * 1048576 + 3 )) 4097 full 2
brw read "$N2" "$N1" $(( 16 * 1048576 + 3 )) 4097 full 2

ul_step "a corrupted byte past the first MiB is found, at its transfer offset: write (the client corrupts), read (the server)"
sst_run "$UL_TMP/w" n1 --json brw write --from "$N1" --to "$N2" --size 16777216 --offset 4097 --corrupt-at 9000001 \
	--corrupt-count 1 --count 3 --concurrency 1
[[ $UL_STATUS == 1 ]] || ul_fail "corrupted write: status $UL_STATUS: $(cat "$UL_TMP/w" "$UL_TMP/w.err")"
ul_json "$UL_TMP/w" "not j['ok'] and j['errors']['mismatch'] == 1 and j['mismatch_offset'] == 9000001 and j['rpcs'] == 2"
"$SST" --node "$(ul_sock n2)" inject --count 1 --at 15000000 >/dev/null || ul_fail "inject"
sst_run "$UL_TMP/r" n1 --json brw read --from "$N1" --to "$N2" --size 16777216 --offset 4097 --count 3 --concurrency 1
[[ $UL_STATUS == 1 ]] || ul_fail "corrupted read: status $UL_STATUS: $(cat "$UL_TMP/r" "$UL_TMP/r.err")"
ul_json "$UL_TMP/r" "not j['ok'] and j['errors']['mismatch'] == 1 and j['mismatch_offset'] == 15000000 and j['rpcs'] == 2"

ul_step "one-shot at the limit (large_max 64 MiB), read, check full"
brw read "$N1" "$N2" 67108864 0 full 1

ul_step "refused before anything is sent: toward a node with large payloads off, and past large_max"
refused "$N3" 1048577 brw write --from "$N1" --to "$N3" --size 1048577 --count 1
grep -q 'server .* has large payloads off' "$UL_TMP/r.err" || ul_fail "$(cat "$UL_TMP/r.err")"
refused "$N3" 16777216 brw read --from "$N3" --to "$N1" --size 16777216 --count 1
refused "$N1" 67108865 brw read --from "$N1" --to "$N2" --size 67108865 --count 1
grep -q 'has large_max 67108864' "$UL_TMP/r.err" || ul_fail "$(cat "$UL_TMP/r.err")"
# n3 made no session and got no test: its engine saw no RPC but the one query (DEBUG)
ul_ctl n3 call selftest stat --json >"$UL_TMP/s3" || ul_fail "selftest stat on n3"
ul_json "$UL_TMP/s3" "j['selftest']['rpcs_rcvd'] == 2 and j['selftest']['rpcs_sent'] == 0 and j['selftest']['bulk_get'] == 0 and not j['selftest']['session']"

ul_step "lst style: 16 MiB + 1 at offset 4097, write then read, check full"
ok new_session big
ok add_group c "$N1"
ok add_group s "$N2"
ok add_group off "$N3"
ok add_batch b
ok add_test --batch b --from c --to s --loop 2 --concurrency 1 brw write size=16777217 off=4097 check=full
ok add_test --batch b --from c --to s --loop 2 --concurrency 1 brw read size=16777217 off=4097 check=full
ok run b
deadline=$(( $(ul__now_ms) + 60000 ))
until sst_run "$UL_TMP/q" n1 query b && grep -q 'idle' "$UL_TMP/q" && ! grep -q ': running' "$UL_TMP/q"; do
	(( $(ul__now_ms) < deadline )) || ul_fail "batch b still running: $(cat "$UL_TMP/q" "$UL_TMP/q.err")"
	sleep 0.1
done
ok --json stop b
ul_json <(sed -n 1p "$UL_TMP/o") "j['ok'] and j['rpcs'] == 4 and j['bytes'] == 4 * 16777217 and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
ul_step "lst style: add_test toward the group whose node has large payloads off: refused, exit 2"
refused "$N3" 2097152 add_test --batch b --from c --to off brw write size=2M
ok end_session
echo PASS
