#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A remote lnet_selftest console that asks for too much (issue 13, "remote console limits"), written
# from lnet-wire.md §2.3/§2.6 and docs/selftest.md §3/§6 apart from ulnet's code. As a socklnd V3 peer
# at ADDR it makes a session on NODE, then sends TEST requests: a client entry with a 49-day RPC timeout,
# a client entry of concurrency 1024 x 1 MiB, and 1025 server entries. Prints one JSON object: each
# reply's status and ulnet limit code (msg_reserved1 when msg_reserved0 is "ULNT"). With --hold it then
# sends a valid client entry whose destination list it never serves (the node's GET gets no answer),
# prints "held", and keeps its connections until stdin closes.
# Usage: sst_hostile_console.py ADDR NODE_ADDR [--hold]
import json, socket, struct, sys, threading
from lnet_peer import (CONN_BULK_IN, CONN_BULK_OUT, CONN_CONTROL, KSOCK_NOOP, LNET_PUT, PID_LUSTRE as PID,
                       WMD_NONE, active_handshake, connect_privileged, ksock_hdr, lnet_hdr, nid,
                       passive_handshake, put_msg, recv_exact, recv_ksock_hdr, srpc_msg, unpack_lnet_hdr,
                       unpack_srpc_head)

addr, node_ip = sys.argv[1], sys.argv[2]
ULNT = 0x554c4e54
me, node = nid(addr), nid(node_ip)
replies, cv = {}, threading.Condition()
send_lock = threading.Lock()


def reader(s):
    try:
        while True:
            ktype, _c, zc0, _z1 = recv_ksock_hdr(s)
            if ktype == KSOCK_NOOP:
                continue
            hdr = recv_exact(s, 72)
            _d, _s, _dp, _sp, mtype, plen = unpack_lnet_hdr(hdr)
            payload = recv_exact(s, plen) if plen else b""
            if zc0:
                with send_lock:
                    s.sendall(ksock_hdr(KSOCK_NOOP, 0, zc0))
            if mtype == LNET_PUT:  # PUT: a reply on portal 52, match bits = our rpyid
                bits, _h, portal, _o = struct.unpack("<QQII", hdr[48:72])
                if portal == 52:
                    with cv:
                        replies[bits] = payload
                        cv.notify_all()
    except (EOFError, OSError):
        pass


def accept_loop(ls):
    while True:
        c, _ = ls.accept()
        try:
            passive_handshake(c, me, PID, 78)
            threading.Thread(target=reader, args=(c,), daemon=True).start()
        except (EOFError, OSError):
            c.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 988))
ls.listen(8)
threading.Thread(target=accept_loop, args=(ls,), daemon=True).start()
conns = []
for ctype in (CONN_CONTROL, CONN_BULK_IN, CONN_BULK_OUT):
    s = connect_privileged(addr, node_ip)
    active_handshake(s, me, node, PID, 78, ctype)
    threading.Thread(target=reader, args=(s,), daemon=True).start()
    conns.append(s)

SID = struct.pack("<Qq", me, 12345)
next_id = [1]


def call(mtype, body_after_rpyid, r0=0, r1=0, wait=True):
    """Send request @mtype to the framework portal; return (status, reserved0, reserved1)."""
    rpyid = next_id[0]
    next_id[0] += 1
    msg = srpc_msg(mtype, struct.pack("<Q", rpyid) + body_after_rpyid, 1, r0, r1)
    bits = 1 if mtype == 0 else 4 if mtype == 8 else 2
    hdr = lnet_hdr(node, me, PID, PID, LNET_PUT, len(msg), put_msg(WMD_NONE, bits, 0, 51, 0))
    with send_lock:
        conns[0].sendall(ksock_hdr() + hdr + msg)
    if not wait:
        return None
    with cv:
        if not cv.wait_for(lambda: rpyid in replies, timeout=10):
            raise SystemExit("no reply to request type %d" % mtype)
        rep = replies.pop(rpyid)
    _m, _v, _t, q0, q1, _f = unpack_srpc_head(rep)
    return struct.unpack("<I", rep[24:28])[0], q0, q1


def test(is_client, concur, ndest, length, r0=0, r1=0, wait=True):
    body = struct.pack("<Q", 0x5000 + next_id[0]) + SID + struct.pack("<QIII", 1, 11, 1, concur)
    body += struct.pack("<BBI", is_client, 0, ndest) + struct.pack("<HHII", 2, 1, length, 0)
    return call(8, body, r0, r1, wait)


out = {}
if "--hold" in sys.argv:  # before the test count limit is reached: a valid client entry
    call(0, SID + struct.pack("<I", 1) + b"hostile".ljust(32, b"\0"))
    test(1, 1, 100, 4096, wait=False)
    print("held", flush=True)
    sys.stdin.read()
    sys.exit(0)
st = call(0, SID + struct.pack("<I", 0) + b"hostile".ljust(32, b"\0"))
out["mksn"] = st[0]
out["timeout"] = test(1, 1, 1, 4096, ULNT, 49 * 24 * 3600 * 1000)
out["memory"] = test(1, 1024, 1, 1 << 20)
statuses = [test(0, 1, 0, 4096) for _ in range(1025)]
out["tests_ok"] = sum(1 for s in statuses if s[0] == 0)
out["tests_last"] = statuses[-1]
print(json.dumps(out))
