#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The metrics endpoint and commands (docs/metrics.md): n1 (127.215.0.1) serves GET /metrics on
# 127.215.0.1:9669; a short selftest brw and a ping to n2 (127.215.0.2) move its counters and
# latency histograms, which the endpoint, `stats show` and `peer show -v` report; `promtool check
# metrics` (Debian's prometheus package) passes on the output when promtool is installed; the HTTP
# errors (404, 405, 400, 431) and the daemon's startup errors are clear; `stats reset` per peer, per
# NI and for the node; export carries the metrics section.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 215
T=215
N1=$(ul_addr $T 1)@tcp
N2=$(ul_addr $T 2)@tcp
URL=http://$(ul_addr $T 1):9669/metrics

ul_start_node n1 <<YAML
metrics:
    listen: $(ul_addr $T 1):9669
net:
    - net type: tcp
      local NI(s):
        - nid: $N1
          interfaces: {0: lo}
YAML
sst_node n2 $T 2 65536

# http OUT [METHOD] URL: the status code of a request (body in OUT, headers in OUT.hdr); python's
# client, as the rest of the checks (no curl in the CI image)
http()
{
	local out=$1 method=GET
	shift
	(( $# == 2 )) && { method=$1; shift; }
	"$UL_PYTHON" - "$out" "$method" "$1" <<'PY'
import sys, urllib.request, urllib.error
out, method, url = sys.argv[1:4]
try:
    r = urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10)
    code, hdr, body = r.status, r.headers, r.read()
except urllib.error.HTTPError as e:
    code, hdr, body = e.code, e.headers, e.read()
except OSError as e:
    code, hdr, body = 0, {}, str(e).encode()
open(out, "wb").write(body)
open(out + ".hdr", "w").write("".join("%s: %s\n" % kv for kv in hdr.items()))
print(code)
PY
}

# scrape FILE: GET /metrics into FILE; fails unless 200 with the text format's content type
scrape()
{
	local code
	code=$(http "$1" "$URL")
	[[ $code == 200 ]] || ul_fail "GET /metrics: HTTP $code: $(head -c 300 "$1")"
	grep -qi '^content-type: text/plain; version=0.0.4' "$1.hdr" || ul_fail "content type: $(cat "$1.hdr")"
}

# value FILE SAMPLE: the value of the one sample line named SAMPLE (name{labels} as printed), or 0
value()
{
	awk -v s="$2" 'index($0, s " ") == 1 { v = $NF } END { print v == "" ? 0 : v }' "$1"
}

# check_promtool FILE
check_promtool()
{
	if command -v promtool >/dev/null; then
		promtool check metrics < "$1" > "$1.promtool" 2>&1 || ul_fail "promtool check metrics: $(cat "$1.promtool")"
		ul_step "promtool check metrics: ok"
	else
		ul_step "SKIP promtool check: promtool not installed (Debian package prometheus)"
	fi
}

ul_step "endpoint before traffic"
scrape "$UL_TMP/m0.txt"
check_promtool "$UL_TMP/m0.txt"
lbl="net=\"tcp\",nid=\"$N1\""
plbl="net=\"tcp\",ni=\"$N1\",nid=\"$N2\""
sent0=$(value "$UL_TMP/m0.txt" "ulnet_sent_messages_total{$lbl}")
get0=$(value "$UL_TMP/m0.txt" "ulnet_get_rtt_seconds_count{$lbl}")
grep -q '^# TYPE ulnet_peer_get_rtt_seconds histogram$' "$UL_TMP/m0.txt" || ul_fail "no peer GET histogram family"
grep -q '^# TYPE ulnet_sent_messages_total counter$' "$UL_TMP/m0.txt" || ul_fail "no sent counter family"

ul_step "traffic: brw write and read, ping"
sst_run "$UL_TMP/w.json" n1 --json brw write --from "$N1" --to "$N2" --size 64K --concurrency 4 --count 64 --check full
[[ $UL_STATUS == 0 ]] || ul_fail "brw write: $(cat "$UL_TMP/w.json" "$UL_TMP/w.json.err")"
sst_run "$UL_TMP/r.json" n1 --json brw read --from "$N1" --to "$N2" --size 4K --concurrency 4 --count 64 --check full
[[ $UL_STATUS == 0 ]] || ul_fail "brw read: $(cat "$UL_TMP/r.json" "$UL_TMP/r.json.err")"
ul_ctl n1 ping "$N2" --count 5 >/dev/null || ul_fail "ping $N2 failed"

scrape "$UL_TMP/m1.txt"
check_promtool "$UL_TMP/m1.txt"
sent1=$(value "$UL_TMP/m1.txt" "ulnet_sent_messages_total{$lbl}")
get1=$(value "$UL_TMP/m1.txt" "ulnet_get_rtt_seconds_count{$lbl}")
pput=$(value "$UL_TMP/m1.txt" "ulnet_peer_put_egress_seconds_count{$plbl}")
pinf=$(value "$UL_TMP/m1.txt" "ulnet_peer_put_egress_seconds_bucket{$plbl,le=\"+Inf\"}")
(( sent1 > sent0 )) || ul_fail "ulnet_sent_messages_total did not move: $sent0 -> $sent1"
(( get1 >= get0 + 5 )) || ul_fail "ulnet_get_rtt_seconds_count did not move by the 5 pings: $get0 -> $get1"
(( pput > 0 && pinf == pput )) || ul_fail "peer PUT egress: count $pput, +Inf bucket $pinf"
ul_step "sent $sent0 -> $sent1, GET round trips $get0 -> $get1, PUT egress to $N2: $pput"

ul_step "stats show and peer show -v"
ul_ctl n1 stats show --json > "$UL_TMP/st.json" || ul_fail "stats show --json"
ul_json "$UL_TMP/st.json" "j['statistics']['latency']['get_rtt']['count'] >= 5 and len(j['statistics']['latency']['get_rtt']['buckets_us']) == 25 and set(j['statistics']['drops']) == {'no_match', 'stale', 'too_long', 'no_memory', 'fault'}"
ul_ctl n1 stats show > "$UL_TMP/st.yaml" || ul_fail "stats show"
grep -q '^        get_rtt:$' "$UL_TMP/st.yaml" && grep -q 'p99_us:' "$UL_TMP/st.yaml" || ul_fail "stats show: $(cat "$UL_TMP/st.yaml")"
grep -q 'buckets_us' "$UL_TMP/st.yaml" && ul_fail "text stats show prints buckets"
ul_ctl n1 peer show -v --nid "$N2" --json > "$UL_TMP/p.json" || ul_fail "peer show -v"
ul_json "$UL_TMP/p.json" "j['peer'][0]['peer ni'][0]['latency']['put_egress']['count'] == $pput and 'down_count' in j['peer'][0]['peer ni'][0]['statistics']"

ul_step "stats reset: one peer, one NI, the node"
ul_ctl n1 stats reset --nid "$N2" || ul_fail "stats reset --nid"
ul_ctl n1 peer show -v --nid "$N2" --json > "$UL_TMP/p2.json"
ul_json "$UL_TMP/p2.json" "j['peer'][0]['peer ni'][0]['latency']['put_egress']['count'] == 0 and j['peer'][0]['peer ni'][0]['statistics']['send_count'] == 0"
scrape "$UL_TMP/m2.txt"
(( $(value "$UL_TMP/m2.txt" "ulnet_get_rtt_seconds_count{$lbl}") == get1 )) || ul_fail "a peer reset reset its NI"
ul_ctl n1 stats reset --net tcp || ul_fail "stats reset --net"
scrape "$UL_TMP/m3.txt"
(( $(value "$UL_TMP/m3.txt" "ulnet_get_rtt_seconds_count{$lbl}") == 0 )) || ul_fail "NI reset left its GET histogram"
ul_ctl n1 stats reset || ul_fail "stats reset"
ul_json <(ul_ctl n1 stats show --json) "j['statistics']['send_count'] < 5"
ul_run "$UL_TMP/e.out" "$UL_TMP/e.err" "$ULNETCTL" --node "$(ul_sock n1)" stats reset --nid 127.215.0.77@tcp
[[ $UL_STATUS == 1 ]] && grep -q "^ulnetctl: stats reset: no peer 127.215.0.77@tcp here$" "$UL_TMP/e.err" || ul_fail "unknown peer: $UL_STATUS $(cat "$UL_TMP/e.err")"
ul_run "$UL_TMP/e.out" "$UL_TMP/e.err" "$ULNETCTL" --node "$(ul_sock n1)" stats reset --net o2ib7
[[ $UL_STATUS == 1 ]] && grep -q "no NI on net o2ib7" "$UL_TMP/e.err" || ul_fail "unknown net: $UL_STATUS $(cat "$UL_TMP/e.err")"
ul_run "$UL_TMP/e.out" "$UL_TMP/e.err" "$ULNETCTL" --node "$(ul_sock n1)" stats reset --nid bogus
[[ $UL_STATUS == 2 ]] || ul_fail "bad NID: status $UL_STATUS"

ul_step "HTTP errors"
[[ $(http "$UL_TMP/h.out" "http://$(ul_addr $T 1):9669/") == 404 ]] || ul_fail "GET / not 404"
[[ $(http "$UL_TMP/h.out" POST "$URL") == 405 ]] || ul_fail "POST not 405"
grep -qi '^allow: GET' "$UL_TMP/h.out.hdr" || ul_fail "405 without Allow: $(cat "$UL_TMP/h.out.hdr")"
[[ $(http "$UL_TMP/h.out" "$URL?x=1") == 200 ]] || ul_fail "a query string is not ignored"
"$UL_PYTHON" - "$(ul_addr $T 1)" <<'PY' || ul_fail "raw HTTP checks failed"
import socket, sys
def ask(data):
    s = socket.create_connection((sys.argv[1], 9669), timeout=10)
    s.sendall(data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out.split(b"\r\n", 1)[0]
assert ask(b"GET /metrics HTTP/1.0\r\n\r\n") == b"HTTP/1.1 200 OK"
assert ask(b"hello\r\n\r\n") == b"HTTP/1.1 400 Bad Request", ask(b"hello\r\n\r\n")
assert ask(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n") == b"HTTP/1.1 431 Request Header Fields Too Large"
# a client that connects and says nothing does not block the next one for ever (5 s idle limit)
idle = socket.create_connection((sys.argv[1], 9669), timeout=10)
assert ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == b"HTTP/1.1 200 OK"
idle.close()
PY

ul_step "hostile local clients: idle, trickle, 50 at once, 9 KiB header, garbage, half-close"
# the daemon's resident memory (kB) and open fds, once the metrics thread has served a scrape (its
# buffers and malloc arena exist)
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$(ul_pid n1)/status"; }
nfds() { ls "/proc/$(ul_pid n1)/fd" | wc -l; }
scrape "$UL_TMP/warm.txt"
rss0=$(rss)
fds0=$(nfds)
"$UL_PYTHON" - "$(ul_addr $T 1)" 9669 "$UL_TMP/attack" <<'PY' >"$UL_TMP/attack.log" 2>&1 &
import errno, os, socket, sys, threading, time
host, port, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def ask(data, half_close=False):
    """send data (then shut the write side if asked) and read the answer until the server closes"""
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(data)
    if half_close:
        s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        out += b
    s.close()
    return out.split(b"\r\n", 1)[0]

# 50 connections at once (non-blocking connects: the backlog is 16) and one more that says nothing
flood = []
for _ in range(51):
    c = socket.socket()
    c.setblocking(False)
    e = c.connect_ex((host, port))
    assert e in (0, errno.EINPROGRESS), e
    flood.append(c)
# a client that sends its request one byte per 100 ms: 140 bytes take 14 s, over the 5 s a connection
# may last; the server must cut it
def trickle(res):
    s = socket.create_connection((host, port), timeout=30)
    data = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 105 + b"\r\n\r\n"
    t0 = time.monotonic()
    try:
        for i in range(len(data)):
            s.send(data[i:i + 1])
            time.sleep(0.1)
        res.append(("complete", s.recv(100)))
    except OSError as e:
        res.append(("cut", e.errno))
    res.append(time.monotonic() - t0)
tres = []
tt = threading.Thread(target=trickle, args=(tres,))
tt.start()
open(mark + ".flooding", "w").close()
# hold the flood until the test has pinged over LNet (bounded)
deadline = time.monotonic() + 30
while not os.path.exists(mark + ".pinged") and time.monotonic() < deadline:
    time.sleep(0.05)
assert os.path.exists(mark + ".pinged"), "no ping within 30 s"
for c in flood:
    c.close()
# the malformed ones, after the flood (the server takes one connection at a time)
assert ask(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n") == b"HTTP/1.1 431 Request Header Fields Too Large"
assert ask(os.urandom(3000).replace(b"\n", b"") + b"\r\n\r\n") == b"HTTP/1.1 400 Bad Request"
assert ask(bytes(range(256)) * 40) == b"HTTP/1.1 431 Request Header Fields Too Large"
# half-close after a whole request: still answered; after half a request: closed, no answer
assert ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", half_close=True) == b"HTTP/1.1 200 OK"
t0 = time.monotonic()
assert ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n", half_close=True) == b""
assert time.monotonic() - t0 < 5.5, "a half-closed partial request held its connection %.1f s" % (time.monotonic() - t0)
tt.join(40)
assert not tt.is_alive(), "the trickling client is still connected"
assert tres[0][0] == "cut" or tres[0][1] == b"", "trickle: %r" % (tres,)
print("trickle: %s after %.1f s" % (tres[0], tres[1]))
PY
apid=$!
deadline=$(( $(ul__now_ms) + 20000 ))
until [[ -e $UL_TMP/attack.flooding ]]; do
	kill -0 "$apid" 2>/dev/null || ul_fail "attack client ended early: $(cat "$UL_TMP/attack.log")"
	(( $(ul__now_ms) < deadline )) || ul_fail "attack client did not start"
	sleep 0.05
done
ul_ctl n1 ping "$N2" --count 3 >/dev/null || ul_fail "LNet ping $N2 failed during the attack"
touch "$UL_TMP/attack.pinged"
wait "$apid" || ul_fail "hostile clients: $(cat "$UL_TMP/attack.log")"
ul_step "$(cat "$UL_TMP/attack.log")"
# after the attack, a real scrape within the bound of one connection (5 s, 1 s more of linger)
t0=$(ul__now_ms)
scrape "$UL_TMP/after.txt"
took=$(( $(ul__now_ms) - t0 ))
(( took <= 6000 )) || ul_fail "scrape after the attack took ${took} ms"
# no fd left behind (the last connection may still linger: wait for it, bounded)
deadline=$(( $(ul__now_ms) + 10000 ))
until (( $(nfds) == fds0 )); do
	(( $(ul__now_ms) < deadline )) || ul_fail "fds: $fds0 before the attack, $(nfds) after: $(ls -l "/proc/$(ul_pid n1)/fd")"
	sleep 0.05
done
rss1=$(rss)
(( rss1 - rss0 <= 1024 )) || ul_fail "RSS grew from $rss0 kB to $rss1 kB over the attack"
ul_step "attack: ping ok during it, scrape after it in ${took} ms, fds $fds0 -> $(nfds), RSS $rss0 -> $rss1 kB"

ul_step "export carries the section; startup errors"
ul_ctl n1 export > "$UL_TMP/exp.yaml" || ul_fail "export"
grep -A1 '^metrics:$' "$UL_TMP/exp.yaml" | grep -q "listen: $(ul_addr $T 1):9669" || ul_fail "export: $(cat "$UL_TMP/exp.yaml")"
mkdir -p "$UL_TMP/n3"
cat > "$UL_TMP/n3/node.yaml" <<YAML
metrics:
    listen: $(ul_addr $T 1):9669
YAML
ul_run "$UL_TMP/n3.out" "$UL_TMP/n3.err" timeout 10 "$ULNETD" -c "$UL_TMP/n3/node.yaml" --control "$UL_TMP/n3/ctl.sock"
[[ $UL_STATUS == 1 ]] || ul_fail "port in use: status $UL_STATUS"
ul_one_line "$UL_TMP/n3.err" "^ulnetd: metrics: cannot listen on $(ul_addr $T 1):9669: Address already in use$"
[[ -e $UL_TMP/n3/ctl.sock ]] && ul_fail "control socket left behind"
printf 'metrics:\n    listen: localhost:9669\n' > "$UL_TMP/n3/node.yaml"
ul_run "$UL_TMP/n3.out" "$UL_TMP/n3.err" timeout 10 "$ULNETD" -c "$UL_TMP/n3/node.yaml" --control "$UL_TMP/n3/ctl.sock"
[[ $UL_STATUS == 1 ]] || ul_fail "host name: status $UL_STATUS"
ul_one_line "$UL_TMP/n3.err" "node.yaml:2: bad metrics listen 'localhost:9669': not an IPv4 address"

ul_stop_node n1
[[ $UL_STATUS == 0 ]] || ul_fail "n1 exit status $UL_STATUS"
[[ $(http "$UL_TMP/h.out" "$URL") == 0 ]] || ul_fail "endpoint still answers after the daemon stopped"
ul_step "ok"
