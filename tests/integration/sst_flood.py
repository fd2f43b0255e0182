#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A hostile selftest peer (issue 13), written from lnet-wire.md §2.3/§2.6 and docs/selftest.md §1/§3
# apart from ulnet's code: a socklnd V3 peer at ADDR that sends NODE brw requests and then never reads
# a byte (tiny receive buffers), so the node's bulk PUTs (READ) never complete and its bulk GETs
# (WRITE) are never answered. It also accepts the node's own connections and never reads them.
# Prints "sent" when every request is out, then holds its sockets until stdin closes.
# Usage: sst_flood.py ADDR NODE_ADDR NREAD NWRITE
import socket, struct, sys, threading

addr, node_ip, nread, nwrite = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
SOCKLND, PID = 2, 12345


def nid(ip):
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]


me, node = nid(addr), nid(node_ip)
held = []


def small(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)


def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def accept_loop(ls):
    while True:
        c, _ = ls.accept()
        try:  # the node connects to us: finish its HELLO, then never read again
            recv_exact(c, 16)
            h = recv_exact(c, 56)
            _m, _v, src, _d, spid, _dp, sinc, _di, ctype, _n = struct.unpack("<IIQQIIQQII", h)
            c.sendall(struct.pack("<IIQQIIQQII", 0x45726963, 3, me, src, PID, spid, 77, sinc,
                                  {2: 3, 3: 2}.get(ctype, ctype), 0))
            held.append(c)
        except (EOFError, OSError):
            c.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
small(ls)
ls.bind((addr, 988))
ls.listen(8)
threading.Thread(target=accept_loop, args=(ls,), daemon=True).start()

def connect_privileged():
    """As the kernel connector: the first free port downwards from 1023 (TIME_WAIT from a rerun)."""
    for port in range(1023, 511, -1):
        s = socket.socket()
        small(s)
        try:
            s.bind((addr, port))
            s.connect((node_ip, 988))
            return s
        except OSError:
            s.close()
    raise OSError("no privileged port free")


conns = []
for ctype in (1, 2, 3):  # CONTROL, BULK_IN, BULK_OUT, as a kernel peer opens them
    s = connect_privileged()
    s.sendall(struct.pack("<IIQ", 0xacce7100, 1, node))
    s.sendall(struct.pack("<IIQQIIQQII", 0x45726963, 3, me, node, PID, 0, 77, 0, ctype, 0))
    recv_exact(s, 56)
    conns.append(s)

ctl = conns[0]
for i in range(nwrite + nread):
    rw = 2 if i < nwrite else 1  # the writes first: each gets its bulk and GETs from us at once
    body = struct.pack("<QQIII", 0x7000 + i, 0x9000 + i, rw, 1 << 20, 3)  # check full: the node fills its bulk
    msg = (struct.pack("<IIIIII", 0xeeb0f00d, 1, 12, 0, 0, 1) + body).ljust(160, b"\0")
    hdr = struct.pack("<QQIIII", node, me, PID, PID, 1, 160) + b"\xff" * 16
    hdr += struct.pack("<QQII", 11, 0, 50, 0)
    ctl.sendall(struct.pack("<IIQQ", 0xc1, 0, 0, 0) + hdr + msg)
print("sent", flush=True)
sys.stdin.read()
