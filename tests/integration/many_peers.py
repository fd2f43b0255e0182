#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# N socklnd peers, each a separate TCP connection from its own 127.91.x.y address and privileged port,
# all established and open at once against one ulnetd: acceptor request, HELLO V3 (CONTROL), then an
# LNet ping GET on every connection.
# Every peer must get its REPLY with valid ping info naming the node. Written from lnet-wire.md
# §2.3, §2.4, §2.6 (independent of ulnet's encoder). Usage: many_peers.py NODE_ADDR N
import socket, struct, sys
from lnet_peer import (CONN_CONTROL, HELLO_MAGIC, KSOCK_LNET, KSOCK_NOOP, LNET_GET, LNET_REPLY, PID_LUSTRE,
                       active_handshake, get_msg, ksock_hdr, lnet_hdr, nid, recv_exact, recv_ksock_hdr,
                       unpack_lnet_hdr)

node_ip, n = sys.argv[1], int(sys.argv[2])
dst = nid(node_ip)

peers = []
for i in range(n):
    ip = "127.91.%d.%d" % (1 + i // 250, 1 + i % 250)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.bind((ip, 1023))
    s.settimeout(20)
    s.connect((node_ip, 988))
    src = nid(ip)
    peers.append((s, src))
    # finish each handshake before the next connect: the node bounds connections still in the
    # handshake (abandoned-connection defence); established peers are what must scale
    h = active_handshake(s, src, dst, PID_LUSTRE, 1000 + i, CONN_CONTROL)
    magic, ver, hsrc, hdst, spid, dpid, sinc, dinc, ctype, nips = h
    assert magic == HELLO_MAGIC and ver == 3 and hsrc == dst and hdst == src, h
    assert ctype == CONN_CONTROL, "reply ctype %d (want CONTROL)" % ctype

for i, (s, src) in enumerate(peers):
    wmd = struct.pack("<QQ", 0x1111, 0x2000 + i)
    msg = get_msg(wmd, 0x8000000000000000, 0, 0, 3960)
    s.sendall(ksock_hdr() + lnet_hdr(dst, src, PID_LUSTRE, PID_LUSTRE, LNET_GET, 0, msg))

for i, (s, src) in enumerate(peers):
    while True:
        ktype = recv_ksock_hdr(s)[0]
        if ktype == KSOCK_NOOP:  # NOOP (keepalive / ZC-ACK): skip
            continue
        assert ktype == KSOCK_LNET, hex(ktype)
        lh = recv_exact(s, 72)
        d, sn, dp, sp, mtype, plen = unpack_lnet_hdr(lh)
        assert mtype == LNET_REPLY and d == src and sn == dst, (mtype, hex(d), hex(sn))
        icookie, ocookie = struct.unpack("<QQ", lh[32:48])
        assert (icookie, ocookie) == (0x1111, 0x2000 + i)
        payload = recv_exact(s, plen)
        magic, feats, pid, nnis = struct.unpack("<IIII", payload[:16])
        assert magic == 0x70696E67 and feats & 2 and nnis >= 2, payload[:16].hex()
        nids = [struct.unpack("<QII", payload[16 + 16 * k:32 + 16 * k])[0] for k in range(nnis)]
        assert nids[0] == 9 << 48 and dst in nids, [hex(x) for x in nids]
        break

print("%d peers answered" % n)
for s, _ in peers:
    s.close()
