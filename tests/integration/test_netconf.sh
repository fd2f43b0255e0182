#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run-time configuration with lnetctl's syntax, 127.228.0.x (tcp) and 127.228.1.x (tcp1):
# net add / net del on a running node (traffic on its other net goes on; what was in flight on the
# removed one fails, nothing hangs; the net can come back), peer add / del of static peers and their
# export, ping with a NID list, --source and lnetctl's --timeout in seconds, -v with a level; and
# every refusal as one line with exit status 2 (usage) or 1 (the node refused).
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 228 1) B=$(ul_addr 228 2) A1=127.228.1.1 B1=127.228.1.2
for n in a b; do
	addr=$A; [[ $n == b ]] && addr=$B
	ul_start_node "$n" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $addr@tcp
YAML
done

# refused NODE STATUS PATTERN ARGS...: the command fails with STATUS and one line matching PATTERN
refused()
{
	local node=$1 want=$2 pat=$3
	shift 3
	ul_run "$UL_TMP/r.out" "$UL_TMP/r.err" ul_ctl "$node" "$@"
	[[ $UL_STATUS == "$want" ]] || ul_fail "'$*': status $UL_STATUS, want $want: $(cat "$UL_TMP/r.err")"
	ul_one_line "$UL_TMP/r.err" "$pat"
}
fds() { ls "/proc/$(ul_pid "$1")/fd" | wc -l; }

ul_step "net add tcp1 on both nodes at run time; ping over it with lnetctl's --timeout (seconds)"
ul_ctl a net add --net tcp1 --nid "$A1@tcp1" --peer-credits 16 || ul_fail "net add on a"
ul_ctl b net add --net tcp1 --nid "$B1@tcp1" || ul_fail "net add on b"
ul_ctl a net show --net tcp1 -v 2 --json >"$UL_TMP/n.json"
ul_json "$UL_TMP/n.json" "j['net'][0]['local NI(s)'][0]['nid'] == '$A1@tcp1' and j['net'][0]['local NI(s)'][0]['tunables']['peer_credits'] == 16"
ul_ctl a net show -v2 >/dev/null || ul_fail "net show -v2"
ul_ctl a net show --verbose=0 >/dev/null || ul_fail "net show --verbose=0"
ul_ctl a ping "$B@tcp,$B1@tcp1" --timeout 5 --json >"$UL_TMP/p.json" || ul_fail "ping of a NID list"
ul_json "$UL_TMP/p.json" "len(j['ping']) == 2"
ul_ctl a ping "$B1@tcp1" --source "$A1@tcp1" >/dev/null || ul_fail "ping --source of the NI that reaches it"
refused a 2 "^ulnetctl: ping $B1@tcp1: --source $A@tcp cannot reach it; it leaves from $A1@tcp1" \
	ping "$B1@tcp1" --source "$A@tcp"
refused a 2 "^ulnetctl: bad NID 'nonsense': " ping "$B@tcp,nonsense"
refused a 2 "^ulnetctl: ping: --timeout .seconds. and --timeout_ms: give one" ping "$B@tcp" --timeout 1 --timeout_ms 5
refused a 1 "^ulnetctl: net add tcp1: File exists" net add --net tcp1 --nid "$A1@tcp1"
refused a 2 "^ulnetctl: net add: --net NET is required" net add --nid "$A1@tcp1"

ul_step "static peers: peer add, show, export, import back, del"
ul_ctl a peer add --prim_nid "$B1@tcp1" --non_mr || ul_fail "peer add"
ul_ctl a peer show --nid "$B1@tcp1" --json >"$UL_TMP/ps.json"
ul_json "$UL_TMP/ps.json" "j['peer'][0]['primary nid'] == '$B1@tcp1'"
ul_ctl a export >"$UL_TMP/e0.yaml"
grep -qF "primary nid: $B1@tcp1" "$UL_TMP/e0.yaml" || ul_fail "export lacks the static peer: $(cat "$UL_TMP/e0.yaml")"
ul_ctl a import "$UL_TMP/e0.yaml" || ul_fail "import of the export"
ul_ctl a export >"$UL_TMP/e1.yaml"
ul_diff "$UL_TMP/e0.yaml" "$UL_TMP/e1.yaml" "export after importing it back"
refused a 1 "^ulnetctl: peer add $B1@tcp1: File exists" peer add --prim_nid "$B1@tcp1"
refused a 1 "^ulnetctl: peer add: --nid $B@tcp: ulnet has no Multi-Rail" peer add --prim_nid "$B1@tcp1" --nid "$B@tcp"
refused a 1 "^ulnetctl: peer add 10.1.1.1@tcp7: .*.no local NI on its net: net add it first.$" peer add --prim_nid 10.1.1.1@tcp7
ul_ctl a peer del --prim_nid "$B1@tcp1" || ul_fail "peer del"
ul_ctl a export >"$UL_TMP/e2.yaml"
! grep -qF "primary nid:" "$UL_TMP/e2.yaml" || ul_fail "export still lists a static peer after peer del"
refused a 1 "^ulnetctl: peer del 10.1.1.1@tcp: " peer del --prim_nid 10.1.1.1@tcp

ul_step "net del refusals: lo, a net the node lacks, a net a route goes through"
refused a 1 "^ulnetctl: net del lo: " net del --net lo
refused a 1 "^ulnetctl: net del tcp5: " net del --net tcp5
refused a 1 "^ulnetctl: net del tcp1: no NI on it uses interface eth9" net del --net tcp1 --if eth9
ul_ctl a route add --net tcp9 --gateway "$B1@tcp1" || ul_fail "route add"
refused a 1 "^ulnetctl: net del tcp1: Device or resource busy" net del --net tcp1
grep -q "net del tcp1: route to tcp9 through $B1@tcp1 uses it (route del --net tcp9 first)" "$(ul_log a)" ||
	ul_fail "the log does not name the route"
ul_ctl a route del --net tcp9 || ul_fail "route del"

ul_step "net del under traffic: pings on tcp1 end with an error, tcp goes on, nothing hangs"
# pinger NODE NID ERRFILE: ping NID in rounds until a round fails (its error in ERRFILE) or
# $UL_TMP/stop exists; the status says which
pinger()
{
	while [[ ! -e $UL_TMP/stop ]]; do
		ul_ctl "$1" ping "$2" --count 200 --timeout_ms 2000 >/dev/null 2>"$3" || return 1
	done
}
fd0=$(fds a)
pinger a "$B1@tcp1" "$UL_TMP/bg.err" &
bg=$!
pinger b "$A@tcp" "$UL_TMP/bg2.err" &
bg2=$!
ul_wait_stat a send_count 200
ul_ctl a net del --net tcp1 || ul_fail "net del"
wait "$bg" && ul_fail "the ping on the removed net did not fail"
grep -q "^ulnetctl: ping $B1@tcp1: " "$UL_TMP/bg.err" || ul_fail "ping on the removed net: $(cat "$UL_TMP/bg.err")"
touch "$UL_TMP/stop"
wait "$bg2" || ul_fail "pings on tcp failed while tcp1 was removed: $(cat "$UL_TMP/bg2.err")"
rm "$UL_TMP/stop"
ul_ctl a net show --json >"$UL_TMP/n2.json"
ul_json "$UL_TMP/n2.json" "[n['net type'] for n in j['net']] == ['lo', 'tcp']"
ul_run "$UL_TMP/p.out" "$UL_TMP/p.err" ul_ctl b ping "$A1@tcp1" --timeout_ms 1000
[[ $UL_STATUS == 1 ]] || ul_fail "b still reaches a's removed NI (status $UL_STATUS)"

ul_step "the net comes back; 20 more add/del rounds under tcp traffic leak no descriptor"
pinger b "$A@tcp" "$UL_TMP/bg3.err" &
bg3=$!
for i in $(seq 20); do
	ul_ctl a net add --net tcp1 --nid "$A1@tcp1" || ul_fail "net add, round $i"
	ul_ctl a ping "$B1@tcp1" --timeout 5 >/dev/null || ul_fail "ping over the re-added net, round $i"
	ul_ctl a net del --net tcp1 || ul_fail "net del, round $i"
done
touch "$UL_TMP/stop"
wait "$bg3" || ul_fail "tcp pings failed during the rounds: $(cat "$UL_TMP/bg3.err")"
fd1=$(fds a)
((fd1 <= fd0)) || ul_fail "descriptors: $fd0 before, $fd1 after the rounds"
ul_ctl a ping "$B@tcp" --count 3 >/dev/null || ul_fail "a no longer pings b over tcp"
echo "fds: $fd0 -> $fd1"
ul_step "ok"
