#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A kernel-like lnet_selftest brw server (issue #32), written apart from ulnet's selftest code (from
# lnet-wire.md §2.3, §2.6, §6.1 and docs/selftest.md §1-§3 only), socklnd V3 passive side on ADDR:988.
# Like a kernel node it posts brw request buffers only when a console's server TEST entry tells it to
# (as many as the entry's loop says, removed with the session): a brw request that arrives with no free
# buffer parks on the lazy request portal and holds its receive buffer, and after PARK_LIMIT parked
# requests the connection is not read any more (the kernel's stall). Parked requests are served in
# order once buffers are posted. Served requests are checked (check=simple/full: the brw pattern;
# check=discard: nothing is looked at) and answered with the kernel's statuses. It answers every
# framework request as a kernel node does (no ulnet extension: the reserved words stay zero) and LNet
# pings (GET on portal 0), whose reply lacks ulnet's large-payload bit (30), as a kernel's does. Counts
# go to STATE (JSON, rewritten after every change). With NODE_ADDR and LEN it is also a brw client, as a
# hostile or mistaken one: it connects to the node and sends COUNT (default 1) brw READ requests of LEN
# bytes (check none), one after the other's reply, and records the last reply's status in
# brw_reply_status and the replies in brw_replies. Usage:
#   kernel_sst_server.py ADDR STATE [NODE_ADDR LEN [COUNT]]
import json, os, socket, struct, sys, threading
from lnet_peer import (ACCEPTOR_MAGIC, CONN_BULK_IN, CONN_BULK_OUT, CONN_CONTROL, HELLO_MAGIC, KSOCK_LNET,
                       KSOCK_NOOP, LNET_GET, LNET_PUT, LNET_REPLY, PID_LUSTRE, SRPC_MAGIC, WMD_NONE, active_handshake,
                       answer_hello, connect_privileged, get_msg, ksock_hdr, lnet_hdr, nid as nid_of, put_msg,
                       recv_connreq, recv_exact, recv_ksock_hdr, srpc_msg, unpack_lnet_hdr, unpack_srpc_head)

addr, state_path = sys.argv[1], sys.argv[2]

PING_MATCHBITS, PING_MAGIC, PING_FEATS = 0x8000000000000000, 0x70696E67, 0x01 | 0x02 | 0x08 | 0x10
LOLND, NI_UP = 9, 0x15aac0de
PORTAL_REQUEST, PORTAL_FRAMEWORK, PORTAL_RDMA = 50, 51, 52
MKSN, RMSN, BATCH, STAT, TEST, DEBUG, BRW = 0, 2, 4, 6, 8, 10, 12
SVC_BRW, BRW_READ, BRW_WRITE = 11, 1, 2
CHECK_NONE, CHECK_SIMPLE, CHECK_FULL, CHECK_DISCARD = 1, 2, 3, 4
BRW_MAGIC = struct.pack("<Q", 0xeeb0eeb1eeb2eeb3)
EINVAL, EBADMSG, ESRCH = 22, 74, 3
PARK_LIMIT = 8  # parked requests after which a connection is not read any more
BULK_TIMEOUT = 20

MY_NID, INCARNATION = nid_of(addr), 0x5157_0000_0000_0002
lock = threading.Condition()
counts = {"pings": 0, "mksn": 0, "rmsn": 0, "debug": 0, "batch": 0, "stat": 0, "server_tests": [],
          "client_tests": 0, "buffers": 0, "brw": 0, "brw_before_buffers": 0, "parked_now": 0, "parked_max": 0,
          "served": 0, "in_service_max": 0, "checks": {}, "mismatch": 0, "bulk_bytes": 0, "session": False,
          "lnet_msgs": 0, "lnet_bytes": 0, "lnet_types": {}, "brw_reply_status": None, "brw_replies": 0}
session = {"sid": b"\0" * 16, "name": b"\0" * 32, "buffers": 0}
free_buffers = [0]
in_service = [0]
parked = []            # (conn, send_lock, lnet header fields, srpc payload) waiting for a buffer
gets = {}              # our GET's wire MD cookie -> [event, payload]
next_cookie = [1]


def save():
    tmp = state_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(counts, f)
    os.replace(tmp, state_path)


def set_buffers(n):
    """Post or remove request buffers (with the lock held); parked requests take new ones in order."""
    delta = n - counts["buffers"]
    counts["buffers"] = n
    free_buffers[0] += delta
    while free_buffers[0] > 0 and parked:
        free_buffers[0] -= 1
        start_service(parked.pop(0))
    counts["parked_now"] = len(parked)
    lock.notify_all()


def handle_framework(payload):
    """One framework request; returns (rpyid, reply bytes) or None when it gets no reply."""
    magic, ver, mtype, _r0, _r1, feats = unpack_srpc_head(payload)
    if magic != SRPC_MAGIC or ver != 1:
        return None
    b = payload[24:]
    rpyid = struct.unpack("<Q", b[:8])[0]
    status, body = 0, b""
    with lock:
        if mtype == MKSN:
            counts["mksn"] += 1
            session["sid"], session["name"] = b[8:24], b[28:60]
            counts["session"] = True
            body = struct.pack("<I", 0) + session["sid"] + struct.pack("<I", 100) + session["name"]
        elif mtype == RMSN:
            counts["rmsn"] += 1
            if counts["session"]:
                counts["session"] = False
                set_buffers(counts["buffers"] - session["buffers"])  # the session's tests go with it
                session["buffers"] = 0
            else:
                status = ESRCH
            body = struct.pack("<I", status) + b"\0" * 16
        elif mtype == DEBUG:
            counts["debug"] += 1
            body = struct.pack("<I", 0) + session["sid"] + struct.pack("<II", 100, 0) + session["name"]
        elif mtype == BATCH:
            counts["batch"] += 1
            body = struct.pack("<I", 0) + session["sid"] + struct.pack("<II", 0, 0)
        elif mtype == STAT:
            counts["stat"] += 1
            body = struct.pack("<I", 0) + session["sid"]
        elif mtype == TEST:
            service, loop, concur = struct.unpack("<III", b[40:52])
            is_client = b[52]
            if not counts["session"] or b[16:32] != session["sid"]:
                status = ESRCH
            elif is_client:
                counts["client_tests"] += 1
            else:
                counts["server_tests"].append([service, loop, concur])
                if service == SVC_BRW:  # the kernel posts loop buffers for a server entry
                    session["buffers"] += loop
                    set_buffers(counts["buffers"] + loop)
            body = struct.pack("<I", status) + session["sid"]
        else:
            return None
        save()
    return rpyid, srpc_msg(mtype + 1, body, feats)


def send(conn, send_lock, data):
    with send_lock:
        conn.sendall(data)


def bulk_get(conn, send_lock, snid, spid, bulkid, length):
    """GET the client's bulk (a brw write); returns the data or None when no REPLY came."""
    with lock:
        cookie = next_cookie[0]
        next_cookie[0] += 1
        ev = [threading.Event(), None]
        gets[cookie] = ev
    wmd = struct.pack("<QQ", 0x5157, cookie)
    send(conn, send_lock, ksock_hdr() + lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_GET, 0,
                                                 get_msg(wmd, bulkid, PORTAL_RDMA, 0, length)))
    ok = ev[0].wait(BULK_TIMEOUT)
    with lock:
        gets.pop(cookie, None)
    return ev[1] if ok else None


def serve_brw(req):
    conn, send_lock, snid, spid, payload = req
    _magic, _ver, _t, _r0, _r1, feats = unpack_srpc_head(payload)
    rpyid, bulkid, rw, length, flags = struct.unpack("<QQIII", payload[24:52])
    status = 0
    pattern = (BRW_MAGIC * ((length + 7) // 8))[:length]
    try:
        with lock:
            counts["checks"][str(flags)] = counts["checks"].get(str(flags), 0) + 1
        if rw not in (BRW_READ, BRW_WRITE) or flags not in (CHECK_NONE, CHECK_SIMPLE, CHECK_FULL, CHECK_DISCARD) \
                or not 0 < length <= 1 << 20:
            status = EINVAL
        elif rw == BRW_WRITE:
            data = bulk_get(conn, send_lock, snid, spid, bulkid, length)
            if data is None or len(data) != length:
                return  # no bulk: the client times the RPC out, as with a kernel whose GET failed
            with lock:
                counts["bulk_bytes"] += length
            good = data == pattern if flags == CHECK_FULL else \
                data[:8] == pattern[:8] and data[-8:] == pattern[-8:] if flags == CHECK_SIMPLE else True
            if not good:
                status = EBADMSG
        else:
            data = pattern if flags != CHECK_DISCARD else b"\0" * length
            send(conn, send_lock, ksock_hdr() + lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_PUT, length,
                                                         put_msg(WMD_NONE, bulkid, 0, PORTAL_RDMA, 0)) + data)
            with lock:
                counts["bulk_bytes"] += length
        with lock:  # counted before the reply goes: whoever sees the reply sees the count
            counts["served"] += 1
            if status:
                counts["mismatch"] += 1
            save()
        reply = srpc_msg(BRW + 1, struct.pack("<I", status), feats)
        send(conn, send_lock, ksock_hdr() + lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_PUT, len(reply),
                                                     put_msg(WMD_NONE, rpyid, 0, PORTAL_RDMA, 0)) + reply)
    except (OSError, EOFError):
        pass
    finally:
        with lock:
            in_service[0] -= 1
            free_buffers[0] += 1  # the buffer is reposted
            while free_buffers[0] > 0 and parked:
                free_buffers[0] -= 1
                start_service(parked.pop(0))
            counts["parked_now"] = len(parked)
            save()
            lock.notify_all()


def start_service(req):
    """With the lock held and a buffer taken."""
    in_service[0] += 1
    counts["in_service_max"] = max(counts["in_service_max"], in_service[0])
    threading.Thread(target=serve_brw, args=(req,), daemon=True).start()


CLIENT_RPYID = 0x7733


def serve(conn, passive=True):
    send_lock = threading.Lock()
    try:
        if passive:
            (magic, ver, dst), h = recv_connreq(conn)
            assert magic == ACCEPTOR_MAGIC and ver == 1 and dst == MY_NID, (hex(magic), ver, hex(dst))
            assert h[0] == HELLO_MAGIC and h[1] == 3 and h[3] == MY_NID, h
            answer_hello(conn, h, MY_NID, PID_LUSTRE, INCARNATION)
        while True:
            with lock:  # the kernel's stall: parked requests hold the receive buffers
                while len(parked) >= PARK_LIMIT:
                    lock.wait()
            ktype, _csum, zc0, _zc1 = recv_ksock_hdr(conn)
            if ktype == KSOCK_NOOP:
                continue
            assert ktype == KSOCK_LNET, hex(ktype)
            hdr = recv_exact(conn, 72)
            _dnid, snid, _dpid, spid, mtype, plen = unpack_lnet_hdr(hdr)
            payload = recv_exact(conn, plen) if plen else b""
            with lock:  # every LNet message that arrived, whatever it is (test_large_kernel_peer.sh)
                counts["lnet_msgs"] += 1
                counts["lnet_bytes"] += plen
                counts["lnet_types"][str(mtype)] = counts["lnet_types"].get(str(mtype), 0) + 1
                save()
            if zc0:  # zero-copy sender: acknowledge the cookie
                send(conn, send_lock, ksock_hdr(KSOCK_NOOP, 0, zc0))
            if mtype == LNET_REPLY:
                _wh, cookie = struct.unpack("<QQ", hdr[32:48])
                with lock:
                    ev = gets.get(cookie)
                if ev:
                    ev[1] = payload
                    ev[0].set()
                continue
            if mtype == LNET_GET:
                ret_wmd = hdr[32:48]
                match_bits, portal, _soff, sink_len = struct.unpack("<QIII", hdr[48:68])
                if portal != 0 or match_bits != PING_MATCHBITS:
                    continue
                with lock:
                    counts["pings"] += 1
                    save()
                info = struct.pack("<IIII", PING_MAGIC, PING_FEATS, PID_LUSTRE, 2)
                info += struct.pack("<QII", LOLND << 48, counts["pings"], 0) + struct.pack("<QII", MY_NID, NI_UP, 0)
                info = info[:sink_len]
                send(conn, send_lock, ksock_hdr() + lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_REPLY, len(info),
                                                             ret_wmd) + info)
                continue
            if mtype != LNET_PUT or len(payload) < 160:
                continue
            match_bits, _hdata, portal, _off = struct.unpack("<QQII", hdr[48:72])
            if portal == PORTAL_RDMA and match_bits == CLIENT_RPYID:  # the reply to our own brw request
                with lock:
                    counts["brw_reply_status"] = struct.unpack("<I", payload[24:28])[0]
                    counts["brw_replies"] += 1
                    save()
                replied.set()
            elif portal == PORTAL_FRAMEWORK:
                out = handle_framework(payload)
                if out:
                    rpyid, reply = out
                    send(conn, send_lock, ksock_hdr() + lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_PUT, len(reply),
                                                                 put_msg(WMD_NONE, rpyid, 0, PORTAL_RDMA, 0)) + reply)
            elif portal == PORTAL_REQUEST and match_bits == SVC_BRW:
                with lock:
                    counts["brw"] += 1
                    if not counts["buffers"]:
                        counts["brw_before_buffers"] += 1
                    req = (conn, send_lock, snid, spid, payload)
                    if free_buffers[0] > 0 and not parked:
                        free_buffers[0] -= 1
                        start_service(req)
                    else:  # the lazy portal keeps it until a buffer is posted
                        parked.append(req)
                        counts["parked_now"] = len(parked)
                        counts["parked_max"] = max(counts["parked_max"], len(parked))
                    save()
    except (EOFError, ConnectionError, OSError):
        pass
    finally:
        conn.close()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 988))
ls.listen(16)
with lock:
    save()
replied = threading.Event()
if len(sys.argv) > 3:  # a brw client too: connect as a kernel peer does, then the READ requests
    node_addr, length = sys.argv[3], int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    conns = []
    for ctype in (CONN_CONTROL, CONN_BULK_IN, CONN_BULK_OUT):
        s = connect_privileged(addr, node_addr)
        active_handshake(s, MY_NID, nid_of(node_addr), PID_LUSTRE, INCARNATION, ctype)
        conns.append(s)
        threading.Thread(target=serve, args=(s, False), daemon=True).start()
    msg = srpc_msg(BRW, struct.pack("<QQIII", CLIENT_RPYID, CLIENT_RPYID + 1, BRW_READ, length, CHECK_NONE), 1)
    for _ in range(count):
        replied.clear()
        conns[0].sendall(ksock_hdr() + lnet_hdr(nid_of(node_addr), MY_NID, PID_LUSTRE, PID_LUSTRE, LNET_PUT,
                                                len(msg), put_msg(WMD_NONE, SVC_BRW, 0, PORTAL_REQUEST, 0)) + msg)
        if not replied.wait(30):
            break
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
