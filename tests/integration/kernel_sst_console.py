#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A kernel lst console in the small (issue #32, check=discard), written from lnet-wire.md §2.3/§2.6/§6.1
# and docs/selftest.md §1-§3 apart from ulnet's code. As a socklnd V3 peer at ADDR it sends what a
# current kernel console sends for `lst add_test --from NODE --to SERVER --loop LOOP --concurrency C brw
# RW size=SIZE check=CHECK` and `lst run`: make session on both, a server TEST entry (loop = C buffers)
# to SERVER, a client TEST entry to NODE (destination list served from our bulk MD on portal 52), BATCH
# RUN to NODE, BATCH QUERY until the batch is idle, remove session on both. No ulnet extension: the
# reserved words stay zero. Prints one JSON object with every reply's status. Usage:
#   kernel_sst_console.py ADDR NODE_ADDR SERVER_ADDR read|write SIZE CHECK LOOP CONCUR
import json, socket, struct, sys, threading, time
from lnet_peer import (CONN_CONTROL, KSOCK_NOOP, LNET_GET, LNET_PUT, LNET_REPLY, PID_LUSTRE as PID, WMD_NONE,
                       active_handshake, connect_privileged, ksock_hdr, lnet_hdr, nid, passive_handshake, put_msg,
                       recv_exact, recv_ksock_hdr, srpc_msg, unpack_lnet_hdr)

addr, node_ip, server_ip = sys.argv[1], sys.argv[2], sys.argv[3]
rw = {"read": 1, "write": 2}[sys.argv[4]]
size, check, loop, concur = (int(a) for a in sys.argv[5:9])
MKSN, RMSN, BATCH, TEST = 0, 2, 4, 8
BRW_SVC, IDS_BULKID = 11, 0x1d5
me = nid(addr)
replies, cv = {}, threading.Condition()
send_lock = threading.Lock()
ids = struct.pack("<QI", nid(server_ip), PID)  # the client's one destination


def reader(s):
    try:
        while True:
            ktype, _c, zc0, _z1 = recv_ksock_hdr(s)
            if ktype == KSOCK_NOOP:
                continue
            hdr = recv_exact(s, 72)
            _d, src, _dp, spid, mtype, plen = unpack_lnet_hdr(hdr)
            payload = recv_exact(s, plen) if plen else b""
            with send_lock:
                if zc0:
                    s.sendall(ksock_hdr(KSOCK_NOOP, 0, zc0))
                if mtype == LNET_GET:  # the client node fetches the destination list
                    bits, portal, _off, sink = struct.unpack("<QIII", hdr[48:68])
                    if portal == 52 and bits == IDS_BULKID:
                        data = ids[:sink]
                        s.sendall(ksock_hdr() + lnet_hdr(src, me, spid, PID, LNET_REPLY, len(data), hdr[32:48]) + data)
                    continue
            if mtype == LNET_PUT:  # a reply on portal 52, match bits = our rpyid
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
            passive_handshake(c, me, PID, 79)
            threading.Thread(target=reader, args=(c,), daemon=True).start()
        except (EOFError, OSError):
            c.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 988))
ls.listen(8)
threading.Thread(target=accept_loop, args=(ls,), daemon=True).start()
conns = {}
for ip in (node_ip, server_ip):
    s = connect_privileged(addr, ip)
    active_handshake(s, me, nid(ip), PID, 79, CONN_CONTROL)
    threading.Thread(target=reader, args=(s,), daemon=True).start()
    conns[ip] = s

SID = struct.pack("<Qq", me, int(time.time() * 1000))
next_id = [1]


def call(ip, mtype, body_after_rpyid):
    """Request @mtype to @ip's framework portal; returns the reply body (after the 24-byte head)."""
    rpyid = next_id[0]
    next_id[0] += 1
    msg = srpc_msg(mtype, struct.pack("<Q", rpyid) + body_after_rpyid, 1)
    bits = {MKSN: 1, RMSN: 2, BATCH: 3, TEST: 4}[mtype]
    hdr = lnet_hdr(nid(ip), me, PID, PID, LNET_PUT, len(msg), put_msg(WMD_NONE, bits, 0, 51, 0))
    with send_lock:
        conns[ip].sendall(ksock_hdr() + hdr + msg)
    with cv:
        if not cv.wait_for(lambda: rpyid in replies, timeout=10):
            raise SystemExit("no reply to request type %d from %s" % (mtype, ip))
        rep = replies.pop(rpyid)
    return rep[24:]


def status(body):
    return struct.unpack("<I", body[:4])[0]


def test(ip, is_client):
    body = struct.pack("<Q", IDS_BULKID if is_client else 0) + SID
    body += struct.pack("<QIII", 1, BRW_SVC, loop if is_client else concur, concur)
    body += struct.pack("<BBI", is_client, 0, 1 if is_client else 0)
    body += struct.pack("<HHII", rw, check, size, 0)
    return status(call(ip, TEST, body))


def batch(opc):
    body = call(node_ip, BATCH, SID + struct.pack("<QIII", 1, opc, 0, 0))
    return status(body), struct.unpack("<I", body[20:24])[0]


out = {}
out["mksn"] = [status(call(ip, MKSN, SID + struct.pack("<I", 0) + b"kcon".ljust(32, b"\0")))
               for ip in (node_ip, server_ip)]
out["test_server"] = test(server_ip, 0)
out["test_client"] = test(node_ip, 1)
if out["test_client"] == 0:
    out["run"] = batch(1)[0]
    deadline = time.monotonic() + 30
    while True:  # the batch ends by itself after loop x concur RPCs
        st, active = batch(3)
        if st or not active or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    out["query"], out["active"] = st, active
out["rmsn"] = [status(call(ip, RMSN, SID)) for ip in (node_ip, server_ip)]
print(json.dumps(out), flush=True)
