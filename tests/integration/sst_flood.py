#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A hostile selftest peer (issue 13), written from lnet-wire.md §2.3/§2.6 and docs/selftest.md §1/§3
# apart from ulnet's code: a socklnd V3 peer at ADDR that sends NODE brw requests and then never reads
# a byte (tiny receive buffers), so the node's bulk PUTs (READ) never complete and its bulk GETs
# (WRITE) are never answered. It also accepts the node's own connections and never reads them.
# Prints "sent" when every request is out, then holds its sockets until stdin closes.
# Usage: sst_flood.py ADDR NODE_ADDR NREAD NWRITE
import socket, struct, sys, threading
from lnet_peer import (CONN_BULK_IN, CONN_BULK_OUT, CONN_CONTROL, LNET_PUT, PID_LUSTRE as PID, WMD_NONE,
                       active_handshake, connect_privileged, ksock_hdr, lnet_hdr, nid, passive_handshake,
                       put_msg, srpc_msg)

addr, node_ip, nread, nwrite = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
me, node = nid(addr), nid(node_ip)
held = []


def small(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)


def accept_loop(ls):
    while True:
        c, _ = ls.accept()
        try:  # the node connects to us: finish its HELLO, then never read again
            passive_handshake(c, me, PID, 77)
            held.append(c)
        except (EOFError, OSError):
            c.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
small(ls)
ls.bind((addr, 988))
ls.listen(8)
threading.Thread(target=accept_loop, args=(ls,), daemon=True).start()

conns = []
for ctype in (CONN_CONTROL, CONN_BULK_IN, CONN_BULK_OUT):  # as a kernel peer opens them
    s = connect_privileged(addr, node_ip, rcvbuf=4096)
    active_handshake(s, me, node, PID, 77, ctype)
    conns.append(s)

ctl = conns[0]
for i in range(nwrite + nread):
    rw = 2 if i < nwrite else 1  # the writes first: each gets its bulk and GETs from us at once
    body = struct.pack("<QQIII", 0x7000 + i, 0x9000 + i, rw, 1 << 20, 3)  # check full: the node fills its bulk
    msg = srpc_msg(12, body, 1)
    hdr = lnet_hdr(node, me, PID, PID, LNET_PUT, len(msg), put_msg(WMD_NONE, 11, 0, 50, 0))
    ctl.sendall(ksock_hdr() + hdr + msg)
print("sent", flush=True)
sys.stdin.read()
