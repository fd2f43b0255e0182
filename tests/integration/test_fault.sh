#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fault rules between two tcp ulnetd (127.216.0.1 and .2) under ulnet-selftest brw (docs/faults.md):
# the ulnetctl fault commands and the config file's fault: section; a 1-in-10 drop ends in classified
# errors and no hang; a 5 ms delay raises the brw latency p50 by 5 ms at least and shows in the
# server's GET round-trip histogram (mean and p50 >= 5 ms); a corrupt rule is
# caught by --check full and named (mismatch); duplicate and reorder are survived with 0 mismatches.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 216
N1=$(ul_addr 216 1)@tcp
N2=$(ul_addr 216 2)@tcp

ul_step "a node starts with the rules of its config file's fault: section, and exports them back"
ul_start_node n1 <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $N1
          interfaces: {0: lo}
fault:
    - kind: reorder
      dst: 192.0.2.9@tcp
      rate: 3
      hold: 20
YAML
ul_start_node n2 <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $N2
          interfaces: {0: lo}
YAML
ul_run "$UL_TMP/fs.json" "$UL_TMP/fs.err" ul_ctl n1 fault show --json
[[ $UL_STATUS == 0 ]] || ul_fail "fault show: $(cat "$UL_TMP/fs.err")"
ul_json "$UL_TMP/fs.json" "len(j['fault']) == 1 and j['fault'][0]['kind'] == 'reorder' and j['fault'][0]['dst'] == '192.0.2.9@tcp' and j['fault'][0]['hold'] == 20"
ul_run "$UL_TMP/ex.yaml" "$UL_TMP/ex.err" ul_ctl n1 export
grep -q '^fault:' "$UL_TMP/ex.yaml" || ul_fail "export has no fault: section: $(cat "$UL_TMP/ex.yaml")"
ul_ctl n1 fault reorder del --all || ul_fail "fault reorder del --all"

ul_step "bad input: one line, exit 2"
for args in "fault drop add" "fault drop add --rate 0" "fault drop add --rate 3 --interval 2" \
	"fault delay add --rate 1" "fault drop add --rate 1 --health_error oops" "fault drop add --rate 1 --message PUSH" \
	"fault drop add --rate 1 --source nonsense" "fault corrupt add --rate 1 --latency 3" "fault drop del" \
	"fault drop add --rate 1 --portal 64"; do
	# shellcheck disable=SC2086
	ul_run "$UL_TMP/bad.out" "$UL_TMP/bad.err" ul_ctl n1 $args
	[[ $UL_STATUS == 2 ]] || ul_fail "'$args': status $UL_STATUS, want 2: $(cat "$UL_TMP/bad.err")"
	[[ $(wc -l <"$UL_TMP/bad.err") == 1 ]] || ul_fail "'$args': not one line: $(cat "$UL_TMP/bad.err")"
done

# brw OUT ARGS...: a brw write from n1 to n2 with a full data check, JSON in OUT
brw()
{
	local out=$1
	shift
	sst_run "$out" n1 --json brw write --from "$N1" --to "$N2" --size 64k --check full "$@"
}

# n2's GET round trips (each brw write's bulk is a GET of n2's, answered by n1's REPLY): count,
# p50 (a bucket bound, never under the truth) and mean in us, from the histogram alone
get_rtt()
{
	ul_run "$UL_TMP/st2.json" "$UL_TMP/st2.err" ul_ctl n2 stats show --json
	[[ $UL_STATUS == 0 ]] || ul_fail "stats show on n2: $(cat "$UL_TMP/st2.err")"
	"$UL_PYTHON" -c "import json,sys; g = json.load(open(sys.argv[1]))['statistics']['latency']['get_rtt']
print(g['count'], g['p50_us'], g['sum_us'] // max(g['count'], 1))" "$UL_TMP/st2.json"
}

ul_step "no rule: a clean baseline (latency p50)"
ul_ctl n2 stats reset || ul_fail "stats reset"
brw "$UL_TMP/base.json" --concurrency 1 --count 200
ul_json "$UL_TMP/base.json" "j['ok'] and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
base_p50=$("$UL_PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['latency_us']['p50'])" "$UL_TMP/base.json")

read -r base_gets base_get_p50 base_get_mean < <(get_rtt)
(( base_gets >= 200 )) || ul_fail "n2 timed $base_gets GET round trips for 200 brw writes"

ul_step "delay 5 ms on n1's sends to n2: p50 up by 5 ms at least, and in n2's GET round-trip histogram"
ul_ctl n1 fault delay add --dest "$N2" --rate 1 --latency 5 || ul_fail "fault delay add"
ul_ctl n2 stats reset || ul_fail "stats reset"
brw "$UL_TMP/delay.json" --concurrency 1 --count 100
ul_json "$UL_TMP/delay.json" "j['ok'] and j['latency_us']['p50'] >= $base_p50 + 5000"
read -r gets get_p50 get_mean < <(get_rtt)
echo "n2's GET round trip: baseline p50 <= $base_get_p50 us, mean $base_get_mean us; delayed p50 <= $get_p50 us, mean $get_mean us ($gets samples)"
(( gets >= 100 && get_mean >= 5000 && get_p50 >= 5000 && get_p50 > base_get_p50 )) ||
	ul_fail "the 5 ms delay is not in n2's GET round trips: $gets samples, p50 $get_p50 us, mean $get_mean us (baseline p50 $base_get_p50)"
ul_run "$UL_TMP/ds.json" "$UL_TMP/ds.err" ul_ctl n1 fault delay show --json
ul_json "$UL_TMP/ds.json" "j['fault'][0]['delayed'] > 0 and j['fault'][0]['matched'] == j['fault'][0]['delayed']"
ul_ctl n1 fault delay del --dest "$N2" || ul_fail "fault delay del"

ul_step "drop 1 in 10 of n1's sends (remote_dropped): classified errors, no hang"
ul_ctl n1 fault drop add --dest "$N2" --rate 10 --health_error remote_dropped || ul_fail "fault drop add"
brw "$UL_TMP/drop.json" --concurrency 4 --count 200 --timeout 5
[[ $UL_STATUS != 124 ]] || ul_fail "brw under drops hung"
ul_json "$UL_TMP/drop.json" "not j['ok'] and sum(j['errors'].values()) > 0 and j['errors']['mismatch'] == 0"
ul_run "$UL_TMP/dr.json" "$UL_TMP/dr.err" ul_ctl n1 fault drop show --json
ul_json "$UL_TMP/dr.json" "j['fault'][0]['dropped'] > 0 and j['fault'][0]['health_error'] == 'remote_dropped'"
ul_ctl n1 fault drop del --all || ul_fail "fault drop del"
brw "$UL_TMP/after.json" --concurrency 4 --count 50
ul_json "$UL_TMP/after.json" "j['ok']"

ul_step "corrupt: check=full catches it and names it (mismatch)"
ul_ctl n1 fault corrupt add --dest "$N2" --rate 5 --message PUT,REPLY || ul_fail "fault corrupt add"
ul_ctl n2 fault corrupt add --dest "$N1" --rate 5 --message PUT,REPLY || ul_fail "fault corrupt add on n2"
brw "$UL_TMP/corrupt.json" --concurrency 2 --count 50 --timeout 5
ul_json "$UL_TMP/corrupt.json" "not j['ok'] and j['errors']['mismatch'] > 0"
ul_ctl n1 fault corrupt del --all && ul_ctl n2 fault corrupt del --all || ul_fail "fault corrupt del"

ul_step "duplicate every message either way: survived, 0 mismatches"
ul_ctl n1 fault duplicate add --rate 1 || ul_fail "fault duplicate add"
ul_ctl n2 fault duplicate add --rate 1 || ul_fail "fault duplicate add on n2"
brw "$UL_TMP/dup.json" --concurrency 4 --count 100 --timeout 10
ul_json "$UL_TMP/dup.json" "j['errors']['mismatch'] == 0"
ul_ctl n1 fault duplicate del --all && ul_ctl n2 fault duplicate del --all || ul_fail "fault duplicate del"

ul_step "reorder 1 in 3 either way: survived, 0 mismatches"
ul_ctl n1 fault reorder add --rate 3 --hold 50 || ul_fail "fault reorder add"
ul_ctl n2 fault reorder add --rate 3 --hold 50 || ul_fail "fault reorder add on n2"
brw "$UL_TMP/reorder.json" --concurrency 4 --count 200 --timeout 10
ul_json "$UL_TMP/reorder.json" "j['ok'] and j['errors']['mismatch'] == 0"
ul_run "$UL_TMP/rs.json" "$UL_TMP/rs.err" ul_ctl n1 fault show --json
ul_json "$UL_TMP/rs.json" "j['fault'][0]['reordered'] > 0"
ul_ctl n1 fault reset || ul_fail "fault reset"
ul_run "$UL_TMP/rz.json" "$UL_TMP/rz.err" ul_ctl n1 fault show --json
ul_json "$UL_TMP/rz.json" "j['fault'][0]['matched'] == 0 and j['fault'][0]['reordered'] == 0"
ul_step "ok"
