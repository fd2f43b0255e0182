#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 12: BATCH STOP as lnet_selftest does it. Without force the client stops launching and lets
# the RPCs in flight finish: after a stop in the middle of 1 MiB brw traffic (both directions) no node
# dropped a message (`ulnetctl stats show`), and every RPC the client sent is in the result (none
# cancelled), with its bulk moved by the server. With --force the RPCs in flight are aborted.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 201
sst_two_nodes 201 # n1: console and server; n2: client
export ULNET_NODE
ULNET_NODE=$(ul_sock n1)
lst() { ul_run "$UL_TMP/o" "$UL_TMP/o.err" timeout 120 "$SST" "$@"; }
ok() { lst "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }
sst_stat() { "$SST" --node "$(ul_sock "$1")" --json stat > "$UL_TMP/$1.sst" || ul_fail "stat $1"; }
field() { "$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['selftest'][sys.argv[2]])" "$UL_TMP/$1.sst" "$2"; }
drops() { ul_ctl "$1" stats show --json | "$UL_PYTHON" -c "import json,sys; print(json.load(sys.stdin)['statistics']['drop_count'])"; }
wait_traffic() # until the client node has sent more than N RPCs (observable, no fixed sleep)
{
	local n=$1 i
	for i in $(seq 400); do
		sst_stat n2
		(( $(field n2 rpcs_sent) > n )) && return 0
		sleep 0.05
	done
	ul_fail "no brw traffic: $(cat "$UL_TMP/n2.sst")"
}

ok new_session s1
ok add_group c "$N2"
ok add_group s "$N1"
ok add_batch b
ok add_test --batch b --from c --to s --concurrency 8 brw write size=1M check=full
ok add_test --batch b --from c --to s --concurrency 8 brw read size=1M check=full

ul_step "stop without force in the middle of brw traffic"
sst_stat n1; get0=$(field n1 bulk_get); put0=$(field n1 bulk_put)
ok run b
wait_traffic 40
ok --json stop b
[[ $(wc -l < "$UL_TMP/o") == 1 ]] || ul_fail "stop: want one result (one client node): $(cat "$UL_TMP/o")"
ul_json "$UL_TMP/o" "j['ok'] and j['rpcs'] > 0 and sum(j['errors'].values()) == 0"
rpcs=$("$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['rpcs'])" "$UL_TMP/o")
sst_stat n2; sst_stat n1
sent=$(field n2 rpcs_sent); get=$(( $(field n1 bulk_get) - get0 )); put=$(( $(field n1 bulk_put) - put0 ))
echo "non-forced stop: client sent $sent RPCs, $rpcs in the result; server moved $get + $put bulk bytes" >&2
(( sent == rpcs )) || ul_fail "RPCs not accounted for: the client sent $sent, the result has $rpcs"
(( get + put == rpcs * 1048576 )) || ul_fail "server bulk $get + $put bytes for $rpcs RPCs of 1 MiB"
(( $(field n1 rpcs_dropped) == 0 && $(field n2 rpcs_dropped) == 0 )) || ul_fail "selftest dropped RPCs"
for n in n1 n2; do
	d=$(drops $n)
	(( d == 0 )) || ul_fail "$n dropped $d message(s) after a stop without force"
done

ul_step "stop --force aborts the RPCs in flight"
ok run b
wait_traffic $(( sent + 40 ))
ok --json stop b --force
rpcs2=$("$UL_PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['rpcs'] + sum(j['errors'].values()))" "$UL_TMP/o")
sst_stat n2
sent2=$(( $(field n2 rpcs_sent) - sent ))
echo "forced stop: client sent $sent2 RPCs, $rpcs2 completed" >&2
(( sent2 > rpcs2 )) || ul_fail "forced stop aborted nothing: sent $sent2, completed $rpcs2"
ok end_session
echo PASS
