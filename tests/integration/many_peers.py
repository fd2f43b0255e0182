#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# N socklnd peers, each a separate TCP connection from its own 127.91.x.y address and privileged port,
# all established and open at once against one ulnetd: acceptor request, HELLO V3 (CONTROL), then an
# LNet ping GET on every connection.
# Every peer must get its REPLY with valid ping info naming the node. Written from lnet-wire.md
# §2.3, §2.4, §2.6 (independent of ulnet's encoder). Usage: many_peers.py NODE_ADDR N
import socket, struct, sys

node_ip, n = sys.argv[1], int(sys.argv[2])
SOCKLND = 2
def nid(ip):
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]
dst = nid(node_ip)

def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError("connection closed after %d of %d bytes" % (len(b), k))
        b += c
    return b

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
    s.sendall(struct.pack("<IIQ", 0xacce7100, 1, dst))
    s.sendall(struct.pack("<IIQQIIQQII", 0x45726963, 3, src, dst, 12345, 0, 1000 + i, 0, 1, 0))
    peers.append((s, src))
    # finish each handshake before the next connect: the node bounds connections still in the
    # handshake (abandoned-connection defence); established peers are what must scale
    h = recv_exact(s, 56)
    magic, ver, hsrc, hdst, spid, dpid, sinc, dinc, ctype, nips = struct.unpack("<IIQQIIQQII", h)
    assert magic == 0x45726963 and ver == 3 and hsrc == dst and hdst == src, h.hex()
    assert ctype == 1, "reply ctype %d (want CONTROL)" % ctype

for i, (s, src) in enumerate(peers):
    body = struct.pack("<QQQIII", 0x1111, 0x2000 + i, 0x8000000000000000, 0, 0, 3960).ljust(40, b"\0")
    lhdr = struct.pack("<QQIIII", dst, src, 12345, 12345, 2, 0) + body
    s.sendall(struct.pack("<IIQQ", 0xc1, 0, 0, 0) + lhdr)

for i, (s, src) in enumerate(peers):
    while True:
        kh = recv_exact(s, 24)
        ktype = struct.unpack("<I", kh[:4])[0]
        if ktype == 0xc0:  # NOOP (keepalive / ZC-ACK): skip
            continue
        assert ktype == 0xc1, hex(ktype)
        lh = recv_exact(s, 72)
        d, sn, dp, sp, mtype, plen = struct.unpack("<QQIIII", lh[:32])
        assert mtype == 3 and d == src and sn == dst, (mtype, hex(d), hex(sn))
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
