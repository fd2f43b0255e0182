#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The console's framework RPCs across byte orders: a big-endian 64 KiB-page node (tests/cross/xnode.c
# under qemu-user, as in test_cross_be.sh) driven as a remote client by a little-endian console
# (byte-swapped session, test request, destination list and extended stats), the same node answering
# only lnet_selftest's counters (a big-endian kernel node's view), and as the server of a remote
# native client. Skips (77) when the cross compiler or qemu is missing.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_xnode_require
ul_require_root "its tcp nodes listen on port 988"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"
X=$UL_TMP/xnode.ppc64
ul_xnode_build "$X"
sst_node con 43 1 4096
sst_node srv 43 3 4096
S3=$(ul_addr 43 3)@tcp
BE=$(ul_addr 43 2)@tcp
XPID=
start_x() # start_x [kernel-stats]: the big-endian node at $BE
{
	"$QEMU_BE" -p 65536 "$X" "$BE" 65536 "$@" >"$UL_TMP/xnode.log" 2>&1 &
	XPID=$!
	for _ in $(seq 100); do grep -q "xnode ready" "$UL_TMP/xnode.log" && return 0; sleep 0.1; done
	ul_fail "xnode did not start: $(cat "$UL_TMP/xnode.log")"
}
stop_x() { [[ -n $XPID ]] && { kill "$XPID" 2>/dev/null; wait "$XPID" 2>/dev/null; XPID=; }; return 0; }
# shellcheck disable=SC2154 # st is set inside the trap
trap 'st=$?; stop_x; (exit "$st"); ul__cleanup' EXIT # keep the status for ul__cleanup

start_x
ul_step "big-endian remote client, driven by a little-endian console"
for rw in write read; do
	for so in "1048576 4097" "4097 1" "65535 65537"; do
		read -r size off <<<"$so"
		sst_run "$UL_TMP/r.json" con --json brw "$rw" --from "$BE" --to "$S3" --size "$size" --offset "$off" \
			--count 4 --concurrency 2 --check full
		[[ $UL_STATUS == 0 ]] || ul_fail "BE client brw $rw $size/$off: $(cat "$UL_TMP/r.json" "$UL_TMP/r.json.err")"
		ul_json "$UL_TMP/r.json" "j['ok'] and j['clients'] == 'remote' and j['rpcs'] == 4 and j['bytes'] == 4 * $size and j['latency_us']['p50'] is not None"
	done
done
ul_step "big-endian server of a remote little-endian client"
sst_run "$UL_TMP/s.json" con --json brw read --from "$S3" --to "$BE" --size 65535 --offset 1 --count 4 --concurrency 2
[[ $UL_STATUS == 0 ]] || ul_fail "BE server: $(cat "$UL_TMP/s.json" "$UL_TMP/s.json.err")"
ul_json "$UL_TMP/s.json" "j['ok'] and j['rpcs'] == 4"
stop_x

ul_step "big-endian client that gives only lnet_selftest counters"
start_x kernel-stats
# the console may still hold the first xnode's peer in its reconnect back-off (a send to it fails at
# once with EHOSTUNREACH until the back-off ends): wait until the new node answers
for i in $(seq 50); do
	ul_ctl con ping "$BE" --timeout_ms 1000 >/dev/null 2>&1 && break
	((i < 50)) || ul_fail "the restarted big-endian node never answered a ping"
	sleep 0.2
done
sst_run "$UL_TMP/k.json" con --json brw write --from "$BE" --to "$S3" --size 1M --offset 8 --count 8 --concurrency 2
[[ $UL_STATUS == 0 ]] || ul_fail "BE counters-only client: $(cat "$UL_TMP/k.json" "$UL_TMP/k.json.err")"
ul_json "$UL_TMP/k.json" "j['ok'] and j['rpcs'] == 8 and j['bytes'] == 8 << 20 and j['latency_us']['p99'] is None"
sst_run "$UL_TMP/k.txt" con ping --from "$BE" --to "$S3" --count 10
[[ $UL_STATUS == 0 ]] || ul_fail "BE counters-only ping: $(cat "$UL_TMP/k.txt" "$UL_TMP/k.txt.err")"
grep -q 'latency n/a (remote clients).*: ok$' "$UL_TMP/k.txt" || ul_fail "ping line: $(cat "$UL_TMP/k.txt")"
stop_x
exit 0
