#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LND-level fault rules (docs/faults.md) on real ulnetd, addresses 127.217.0.x only. tcp (typed_conns
# 0: one connection per peer, lnd timeout 2 s, reconnects from 100 ms): a hello rule makes the peer
# log our bad version and the ping fail by the lnd timeout, then the reconnect after `del`, and with
# --rate 2 the retry that gets through; a stall rule ends a ping in the lnd timeout's error (no hang)
# and a stall with a latency delays it by that latency. o2ib on the shm provider (lnd timeout 2 s): a
# reject rule's reason decides what the active side does (FATAL, MSG_QUEUE_SIZE: an error naming it;
# CONN_STALE with --rate 2: the retry is accepted), and a stall as on tcp.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=217
TCP_TUN="timeout: 2
              typed_conns: 0
              min_reconnectms: 100
              max_reconnectms: 400"

tcp_node()
{
	local name=$1 n=$2
	ul_start_node "$name" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr $T "$n")@tcp
          interfaces: {0: lo}
          lnd tunables:
              $TCP_TUN
YAML
}

# ping_ms NODE NID TIMEOUT_MS OUT ERR: one ping; UL_STATUS its exit status, ms how long it took
ping_ms()
{
	local t0
	t0=$(ul__now_ms)
	ul_run "$4" "$5" ul_ctl "$1" ping "$2" --count 1 --timeout_ms "$3" --json
	ms=$(( $(ul__now_ms) - t0 ))
}

# ping_until NODE NID SECONDS: a ping succeeds before the deadline (a reconnect may take a few tries)
ping_until()
{
	local deadline=$(( $(ul__now_ms) + $3 * 1000 ))
	while :; do
		ul_run "$UL_TMP/pu.out" "$UL_TMP/pu.err" ul_ctl "$1" ping "$2" --count 1 --timeout_ms 1000
		(( UL_STATUS == 0 )) && return 0
		(( $(ul__now_ms) < deadline )) || ul_fail "$1: no ping to $2 within $3 s: $(cat "$UL_TMP/pu.err")"
	done
}

# show NODE KIND OUT: `fault KIND show --json` into OUT
show() { ul_ctl "$1" fault "$2" show --json >"$3" || ul_fail "$1: fault $2 show"; }

N1=$(ul_addr $T 1)@tcp
N2=$(ul_addr $T 2)@tcp
N3=$(ul_addr $T 3)@tcp

ul_step "tcp: three nodes; bad input is one line and exit 2"
tcp_node n1 1
tcp_node n2 2
tcp_node n3 3
for args in "fault reject add --rate 1" "fault reject add --rate 1 --reason 10" \
	"fault reject add --rate 1 --reason STALE" "fault hello add --rate 1 --latency 5" \
	"fault stall add --rate 1 --portal 3" "fault hello add --rate 1 --reason FATAL" \
	"fault stall add --rate 1 --message PUT" "fault drop add --rate 1 --version 3"; do
	# shellcheck disable=SC2086
	ul_run "$UL_TMP/bad.out" "$UL_TMP/bad.err" ul_ctl n1 $args
	[[ $UL_STATUS == 2 ]] || ul_fail "'$args': status $UL_STATUS, want 2: $(cat "$UL_TMP/bad.err")"
	[[ $(wc -l <"$UL_TMP/bad.err") == 1 ]] || ul_fail "'$args': not one line: $(cat "$UL_TMP/bad.err")"
done

ul_step "tcp hello: n2 logs our bad version, the ping fails by the lnd timeout (2 s), no hang"
ul_ctl n1 fault hello add --dest "$N2" --rate 1 || ul_fail "fault hello add"
ping_ms n1 "$N2" 8000 "$UL_TMP/h.out" "$UL_TMP/h.err"
(( UL_STATUS != 0 )) || ul_fail "ping through a wrong HELLO version succeeded"
grep -q 'timed out' "$UL_TMP/h.err" || ul_fail "ping error is not the timeout: $(cat "$UL_TMP/h.err")"
(( ms >= 1500 && ms < 7000 )) || ul_fail "ping failed after $ms ms, want the lnd timeout (2 s), not the ping's (8 s)"
grep -q 'HELLO (answering with ours): bad kshm_version 2989' "$(ul_log n2)" ||
	ul_fail "n2 did not log the bad version: $(grep -i hello "$(ul_log n2)")"
grep -q "fault rule .*our HELLO carries version 2989" "$(ul_log n1)" || ul_fail "n1 did not log its spoiled HELLO"
show n1 hello "$UL_TMP/hs.json"
ul_json "$UL_TMP/hs.json" "len(j['fault']) == 1 and j['fault'][0]['version'] == 2989 and j['fault'][0]['spoiled'] >= 1 and j['fault'][0]['matched'] == j['fault'][0]['spoiled'] and 'portal' not in j['fault'][0]"

ul_step "tcp hello deleted: the next reconnect gets through"
ul_ctl n1 fault hello del --dest "$N2" || ul_fail "fault hello del"
ping_until n1 "$N2" 5

ul_step "tcp hello --rate 2 (n1 to n3): the first HELLO is refused, the retry is accepted"
# --seed 2: the rule acts on the first of each window of 2 (without a seed: on the second)
ul_ctl n1 fault hello add --dest "$N3" --rate 2 --seed 2 --version 7 || ul_fail "fault hello add --rate 2"
ping_ms n1 "$N3" 5000 "$UL_TMP/h2.out" "$UL_TMP/h2.err"
(( UL_STATUS == 0 )) || ul_fail "ping with every second HELLO spoiled: $(cat "$UL_TMP/h2.err")"
show n1 hello "$UL_TMP/h2.json"
ul_json "$UL_TMP/h2.json" "j['fault'][0]['matched'] == 2 and j['fault'][0]['spoiled'] == 1"
[[ $(grep -c 'bad kshm_version 7 ' "$(ul_log n3)") == 1 ]] || ul_fail "n3 did not see exactly one bad HELLO"
ul_ctl n1 fault hello del --all || ul_fail "fault hello del --all"

ul_step "tcp stall until deleted: the live connection stops; the ping ends in the lnd timeout, no hang"
ul_ctl n1 fault stall add --dest "$N2" --rate 1 || ul_fail "fault stall add"
show n1 stall "$UL_TMP/ss.json"
ul_json "$UL_TMP/ss.json" "j['fault'][0]['stalled'] == 1 and 'latency' not in j['fault'][0]" # the live conn
ping_ms n1 "$N2" 8000 "$UL_TMP/s.out" "$UL_TMP/s.err"
(( UL_STATUS != 0 )) || ul_fail "ping over a stalled connection succeeded after $ms ms: $(cat "$UL_TMP/s.out")"
grep -q 'timed out' "$UL_TMP/s.err" || ul_fail "stall: ping error is not the timeout: $(cat "$UL_TMP/s.err")"
(( ms >= 1500 && ms < 7000 )) || ul_fail "stall: ping failed after $ms ms, want the lnd timeout (2 s)"
grep -q 'could not send for 2 s' "$(ul_log n1)" || ul_fail "n1 did not close the stalled conn by its tx timeout"
ul_ctl n1 fault stall del --dest "$N2" || ul_fail "fault stall del"
ping_until n1 "$N2" 5

ul_step "tcp stall --latency 700: the ping waits the stall out and succeeds"
# the live conn stalls when the rule is added: the ping, a little later, waits the rest of the 700 ms
t_add=$(ul__now_ms)
ul_ctl n1 fault stall add --dest "$N2" --rate 1 --latency 700 || ul_fail "fault stall add --latency"
ping_ms n1 "$N2" 5000 "$UL_TMP/sl.out" "$UL_TMP/sl.err"
(( UL_STATUS == 0 )) || ul_fail "ping through a 700 ms stall: $(cat "$UL_TMP/sl.err")"
(( $(ul__now_ms) - t_add >= 700 )) || ul_fail "the ping got through less than 700 ms after the stall began"
ul_json "$UL_TMP/sl.out" "float(j['ping'][0]['time (ms)']) >= 300"
grep -q 'stall over (its latency is over)' "$(ul_log n1)" || ul_fail "n1 did not log the end of the stall"
ul_ctl n1 fault stall del --all || ul_fail "fault stall del --all"

O1=$(ul_addr $T 11)@o2ib
O2=$(ul_addr $T 12)@o2ib
O3=$(ul_addr $T 13)@o2ib
O4=$(ul_addr $T 14)@o2ib
ul_step "o2ib (shm): four nodes; o2 rejects with a reason per peer"
for n in 1 2 3 4; do
	ul_o2ib_node "o$n" $T $((10 + n)) 4096 2
done
ul_ctl o2 fault reject add --source "$O1" --rate 1 --reason FATAL || ul_fail "fault reject add FATAL"
# --seed 2: the first of each window of 2 is rejected
ul_ctl o2 fault reject add --source "$O3" --rate 2 --seed 2 --reason CONN_STALE || ul_fail "fault reject add CONN_STALE"
ul_ctl o2 fault reject add --source "$O4" --rate 1 --reason 7 || ul_fail "fault reject add 7"

ul_step "o2ib reject FATAL: the active side gives up at once, naming the reason"
ping_ms o1 "$O2" 8000 "$UL_TMP/r1.out" "$UL_TMP/r1.err"
(( UL_STATUS != 0 )) || ul_fail "ping through a FATAL reject succeeded"
grep -q 'refused' "$UL_TMP/r1.err" || ul_fail "FATAL: ping error is not ECONNREFUSED: $(cat "$UL_TMP/r1.err")"
(( ms < 1500 )) || ul_fail "FATAL: the ping took $ms ms: a FATAL reject is no retry"
grep -q "connection to $O2 rejected FATAL .*giving up" "$(ul_log o1)" || ul_fail "o1 did not log the FATAL reject"
grep -q "rejected FATAL: a fault rule" "$(ul_log o2)" || ul_fail "o2 did not log its fault reject"

ul_step "o2ib reject CONN_STALE --rate 2: the active side retries at once and is accepted"
ul_run "$UL_TMP/r3.out" "$UL_TMP/r3.err" ul_ctl o3 ping "$O2" --count 1 --timeout_ms 5000
(( UL_STATUS == 0 )) || ul_fail "CONN_STALE then accept: ping failed: $(cat "$UL_TMP/r3.err")"
# (o3 logs its retry at info level; o2's counters below show the reject and the second request)

ul_step "o2ib reject MSG_QUEUE_SIZE (7): nothing smaller to offer, the active side gives up (EPROTO)"
ul_run "$UL_TMP/r4.out" "$UL_TMP/r4.err" ul_ctl o4 ping "$O2" --count 1 --timeout_ms 5000
(( UL_STATUS != 0 )) || ul_fail "ping through a MSG_QUEUE_SIZE reject succeeded"
grep -q 'rotocol error' "$UL_TMP/r4.err" || ul_fail "MSG_QUEUE_SIZE: ping error is not EPROTO: $(cat "$UL_TMP/r4.err")"
grep -q "connection to $O2 rejected MSG_QUEUE_SIZE .*giving up" "$(ul_log o4)" || ul_fail "o4 did not log the reject"
show o2 reject "$UL_TMP/rs.json"
ul_json "$UL_TMP/rs.json" "[(f['reason'], f['matched'], f['rejected']) for f in j['fault']] == [('FATAL', 1, 1), ('CONN_STALE', 2, 1), ('MSG_QUEUE_SIZE', 1, 1)]"

ul_step "o2ib reject deleted: o1 connects"
ul_ctl o2 fault reject del --all || ul_fail "fault reject del --all"
ping_until o1 "$O2" 5

ul_step "o2ib stall --latency 700 on the live connection: the ping waits it out"
t_add=$(ul__now_ms)
ul_ctl o1 fault stall add --dest "$O2" --rate 1 --latency 700 || ul_fail "o2ib fault stall add --latency"
ping_ms o1 "$O2" 5000 "$UL_TMP/os.out" "$UL_TMP/os.err"
(( UL_STATUS == 0 )) || ul_fail "o2ib ping through a 700 ms stall: $(cat "$UL_TMP/os.err")"
(( $(ul__now_ms) - t_add >= 700 )) || ul_fail "o2ib: the ping got through less than 700 ms after the stall began"
ul_json "$UL_TMP/os.out" "float(j['ping'][0]['time (ms)']) >= 300"
grep -q 'stall over (its latency is over)' "$(ul_log o1)" || ul_fail "o1 did not log the end of the stall"
ul_ctl o1 fault stall del --all || ul_fail "fault stall del --all"

ul_step "o2ib stall until deleted: the ping ends in the lnd timeout (2 s), then works again"
ul_ctl o1 fault stall add --dest "$O2" --rate 1 || ul_fail "o2ib fault stall add"
ping_ms o1 "$O2" 8000 "$UL_TMP/os2.out" "$UL_TMP/os2.err"
(( UL_STATUS != 0 )) || ul_fail "o2ib ping over a stalled connection succeeded"
grep -q 'timed out' "$UL_TMP/os2.err" || ul_fail "o2ib stall: ping error is not the timeout: $(cat "$UL_TMP/os2.err")"
(( ms >= 1500 && ms < 7000 )) || ul_fail "o2ib stall: ping failed after $ms ms, want the lnd timeout (2 s)"
grep -q 'waited 2 s for credits (lnd tunable timeout)' "$(ul_log o1)" || ul_fail "o1 did not close the stalled conn by its timeout"
show o1 stall "$UL_TMP/oss.json"
ul_json "$UL_TMP/oss.json" "j['fault'][0]['stalled'] >= 1"
ul_ctl o1 fault stall del --all || ul_fail "fault stall del"
ping_until o1 "$O2" 5
ul_step "ok"
