#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wireshark's LNet dissector as an oracle (testbed-notes.md §1): capture port 988 on lo while two
# ulnetd (127.36.0.1 / .2) ping each other and move 64 KiB and 1 MiB brw writes, then decode. Every
# LNET message that decodes must have a known type, our two NIDs and a payload length fitting its
# type, and pings (GET + REPLY) must be among them. The dissector cannot read the acceptor request,
# the HELLO or NOOPs and loses sync when a segment does not start at a message boundary, so we
# require a floor of decoded messages rather than all of them.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP
command -v tshark >/dev/null || { echo "SKIP: no tshark" >&2; exit 77; }
[[ $(id -u) == 0 ]] || { echo "SKIP: capturing needs root" >&2; exit 77; }
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
N1=$(ul_addr 36 1)@tcp
N2=$(ul_addr 36 2)@tcp

tshark -i lo -B 256 -f "tcp port 988 and host $(ul_addr 36 1)" -w "$T/cap.pcapng" >"$T/tshark.log" 2>&1 &
cap=$!
for _ in $(seq 100); do grep -q "Capturing on" "$T/tshark.log" && break; sleep 0.05; done
# "Capturing on" comes before the filter really sees packets: knock on the (still closed) port until a
# packet shows up in the file, so the nodes' first connection is captured from its first byte
captured=0
for _ in $(seq 100); do
	"$UL_PYTHON" -c 'import socket,sys; s=socket.socket(); s.settimeout(0.2)
try: s.connect((sys.argv[1], 988))
except OSError: pass' "$(ul_addr 36 1)"
	captured=$(capinfos -c -M "$T/cap.pcapng" 2>/dev/null | awk '/Number of packets/ {print $NF}' || true)
	(( ${captured:-0} > 0 )) && break
	sleep 0.1
done
(( ${captured:-0} > 0 )) || ul_fail "tshark captured nothing on port 988: $(cat "$T/tshark.log")"

for n in 1 2; do
	ul_start_node "n$n" <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 36 "$n")@tcp
YAML
done
ul_step "traffic"
ul_ctl n1 ping "$N2" --count 3 >/dev/null || ul_fail "ping n1 -> n2"
ul_ctl n2 ping "$N1" --count 3 >/dev/null || ul_fail "ping n2 -> n1"
for size in 65536 1048576; do
	"$SST" --node "$(ul_sock n1)" brw write --from "$N1" --to "$N2" --size "$size" --count 3 \
		--concurrency 1 --check full >/dev/null || ul_fail "brw write $size"
done
# The LNet messages of that traffic (the decoder below lists them): 6 pings of GET + REPLY, 6 brw of
# request PUT, reply PUT, GET and REPLY, and each of the two runs' session on the server (make and
# remove: a request PUT and a reply PUT each; docs/selftest.md, the one-shot run)
want_sent=44
sent_count() # both nodes' send_count
{
	local n sum=0
	for n in 1 2; do
		ul_ctl "n$n" stats show --json >"$T/stats$n.json" || ul_fail "stats n$n"
		sum=$((sum + $("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["statistics"]["send_count"])' "$T/stats$n.json")))
	done
	echo "$sum"
}
decoded_count() # LNet headers decoded from the capture file so far (it may end mid-record)
{
	tshark -r "$T/cap.pcapng" -Y 'lnet.msg_type' -T fields -E aggregator=';' -e lnet.msg_type 2>/dev/null |
		tr ';' '\n' | grep -c . || true
}
# Wait for what the checks below count, not for a fixed time: the nodes have counted every message
# (then the counters are final), and the capture file holds them all (tshark writes as it reads). The
# 30 s deadlines only guard against a hang: an incomplete capture is judged (and retried) below.
deadline=$(( $(ul__now_ms) + 30000 ))
while sent=$(sent_count); (( sent < want_sent && $(ul__now_ms) < deadline )); do sleep 0.05; done
(( sent >= want_sent )) || ul_fail "the nodes sent $sent LNet messages, want $want_sent"
deadline=$(( $(ul__now_ms) + 30000 ))
while (( $(decoded_count) < sent && $(ul__now_ms) < deadline )); do sleep 0.1; done
kill -INT "$cap"
wait "$cap" || true

ul_step "decode"
tshark -r "$T/cap.pcapng" -Y 'lnet.msg_type' -T fields -E separator='|' -E aggregator=';' -e frame.number -e lnet.msg_type \
	-e lnet.nid.addr -e lnet.payload_length >"$T/lnet.csv" 2>"$T/decode.err" || true
total=$(wc -l <"$T/lnet.csv")
echo "frames with a decoded LNet header: $total" >&2
tshark -r "$T/cap.pcapng" -q -z expert >"$T/expert.txt" 2>/dev/null || true
rc=0
"$UL_PYTHON" - "$T/lnet.csv" "$(ul_addr 36 1)" "$(ul_addr 36 2)" "$sent" "$T/expert.txt" <<'PY' || rc=$?
import sys, collections
ours = {sys.argv[2], sys.argv[3]}
bad, types = [], {}
seen = collections.Counter()
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    frame, mtypes, addrs, plens = (line.rstrip("\n").split("|") + [""] * 4)[:4]
    # a frame carrying several messages lists each field once per message (the two NID addresses,
    # dest then src, per message), ';'-separated
    a = addrs.split(";")
    for i, (mtype, plen) in enumerate(zip(mtypes.split(";"), plens.split(";"))):
        dst, src = (a[2 * i:2 * i + 2] + ["", ""])[:2]
        t = int(mtype, 0)
        types[t] = types.get(t, 0) + 1
        seen[(t, int(plen, 0))] += 1
        if t not in (0, 1, 2, 3):
            bad.append((frame, "type", mtype))
        if src not in ours or dst not in ours:
            bad.append((frame, "nids", src, dst))
        if t in (0, 2) and int(plen, 0) != 0:
            bad.append((frame, "ACK/GET payload", plen))
        if int(plen, 0) > 1 << 20:
            bad.append((frame, "payload over 1 MiB", plen))
print("decoded types (ACK=0 PUT=1 GET=2 REPLY=3):", types, file=sys.stderr)
if bad:
    print("mis-decoded:", bad[:10], file=sys.stderr)
    sys.exit(1)
# 6 pings: GET + 48-byte REPLY (ping info with 2 NIDs); 3 brw of 64 KiB and 3 of 1 MiB: request PUT
# and reply PUT (160-byte srpc messages), the server's GET and the client's bulk REPLY; per run, the
# session made and removed on the server: 4 more 160-byte PUTs
want = collections.Counter({(2, 0): 12, (3, 48): 6, (1, 160): 20, (3, 65536): 3, (3, 1048576): 3})
if seen != want:
    print("decoded", dict(seen), "!= sent", dict(want), file=sys.stderr)
    # Messages missing but none wrong: the capture dropped segments or the dissector lost sync
    # (testbed-notes §1), which says nothing about our wire; the shell runs the scenario once more.
    # Anything decoded with a type, NID or length we did not send is a failure at once.
    only_missing = all(seen[k] <= want[k] for k in seen)
    if "not captured" in open(sys.argv[5]).read():
        print("tshark reports segments that were not captured", file=sys.stderr)
    sys.exit(3 if only_missing else 1)
if sum(seen.values()) != int(sys.argv[4]):
    print("decoded", sum(seen.values()), "messages, the nodes sent", sys.argv[4], file=sys.stderr)
    sys.exit(1)
print("all", sum(seen.values()), "messages sent were decoded", file=sys.stderr)
PY
if (( rc == 3 )) && [[ -z ${UL_TSHARK_RETRY:-} ]]; then
	# an incomplete capture proves nothing either way: run the whole scenario once more
	ul_step "capture incomplete; running the scenario again"
	ul_stop_node n1
	ul_stop_node n2
	trap - EXIT
	rm -rf "$UL_TMP"
	UL_TSHARK_RETRY=1 exec bash "$0"
fi
(( rc == 0 )) || ul_fail "decoded messages differ from what was sent (see above)"
ul_step "PASS"
