#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A kernel-like lnet_selftest node, written apart from ulnet's selftest code (from lnet-wire.md §2.3,
# §2.6, §6.1 and docs/selftest.md §1-§3 only): socklnd V3 passive side on ADDR:988, answers every
# framework request (make/remove session, debug, batch, stat) as a kernel node does (no ulnet
# extension: the reserved words stay zero), and checks each brw TEST client entry with the kernel's
# offset rules: an offset that is not a multiple of 8 is refused (EINVAL); one that makes the transfer
# span more pages than ceil(len / 4096) is counted as a crash (a real kernel node LBUGs). Counts go to
# STATE (JSON, rewritten after every request). It also answers LNet pings (GET on portal 0) with ping
# info announcing BASE, NI_STATUS, MULTI_RAIL and DISCOVERY, as a kernel Multi-Rail node does. Usage:
#   kernel_sst_client.py ADDR STATE [--refuse-tests ERRNO]
import json, os, socket, struct, sys, threading
from lnet_peer import (ACCEPTOR_MAGIC, HELLO_MAGIC, KSOCK_LNET, KSOCK_NOOP, LNET_GET, LNET_PUT, LNET_REPLY,
                       PID_LUSTRE, SRPC_MAGIC, WMD_NONE, ksock_hdr, lnet_hdr, answer_hello, nid as nid_of,
                       put_msg, recv_connreq, recv_exact, recv_ksock_hdr, srpc_msg, unpack_lnet_hdr, unpack_srpc_head)

addr, state_path = sys.argv[1], sys.argv[2]
refuse = int(sys.argv[sys.argv.index("--refuse-tests") + 1]) if "--refuse-tests" in sys.argv else 0

PAGE = 4096
PING_MATCHBITS, PING_MAGIC, PING_FEATS = 0x8000000000000000, 0x70696E67, 0x01 | 0x02 | 0x08 | 0x10
LOLND, NI_UP = 9, 0x15aac0de
PORTAL_REQUEST, PORTAL_FRAMEWORK, PORTAL_RDMA = 50, 51, 52
MKSN, RMSN, BATCH, STAT, TEST, DEBUG, BRW = 0, 2, 4, 6, 8, 10, 12
EINVAL = 22


MY_NID, INCARNATION = nid_of(addr), 0x5157_0000_0000_0001
lock = threading.Lock()
counts = {"pings": 0, "mksn": 0, "rmsn": 0, "debug": 0, "batch": 0, "stat": 0, "tests": 0, "client_tests": 0,
          "server_tests": 0, "brw": 0, "unaligned_refused": 0, "would_crash": 0, "accepted": []}
session = {"sid": b"\0" * 16, "name": b"\0" * 32}


def save():
    tmp = state_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(counts, f)
    os.replace(tmp, state_path)


def kernel_brw_client_check(length, offset):
    """What a kernel brw client does with (len, offset): 'ok', 'einval' or 'crash'."""
    if offset % 8:
        return "einval"
    npg = (length + PAGE - 1) // PAGE
    laid_out = (offset % PAGE + length + PAGE - 1) // PAGE
    counted = (offset + length + PAGE - 1) // PAGE if offset >= PAGE else laid_out
    return "crash" if laid_out > npg or counted > npg else "ok"


def srpc_reply(req_type, feats, body):
    return srpc_msg(req_type + 1, body, feats)


def handle_srpc(payload):
    """One request; returns (rpyid, reply bytes) or None when it gets no reply."""
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
            body = struct.pack("<I", 0) + session["sid"] + struct.pack("<I", 100) + session["name"]
        elif mtype == RMSN:
            counts["rmsn"] += 1
            body = struct.pack("<I", 0) + b"\0" * 16
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
            counts["tests"] += 1
            service, loop, concur = struct.unpack("<III", b[40:52])
            is_client = b[52]
            opc, flags, length, offset = struct.unpack("<HHII", b[58:70])
            if refuse:
                status = refuse
            elif is_client and service == 11 and feats & 1:
                counts["client_tests"] += 1
                verdict = kernel_brw_client_check(length, offset)
                if verdict == "einval":
                    counts["unaligned_refused"] += 1
                    status = EINVAL
                elif verdict == "crash":
                    counts["would_crash"] += 1
                else:
                    counts["accepted"].append([length, offset])
            elif is_client:
                counts["client_tests"] += 1
            else:
                counts["server_tests"] += 1
            body = struct.pack("<I", status) + session["sid"]
        elif mtype == BRW:
            counts["brw"] += 1
            save()
            return None  # a client never sends us brw requests in these tests: count only
        else:
            return None
        save()
    return rpyid, srpc_reply(mtype, feats, body)


def serve(conn):
    send_lock = threading.Lock()
    try:
        (magic, ver, dst), h = recv_connreq(conn)
        assert magic == ACCEPTOR_MAGIC and ver == 1 and dst == MY_NID, (hex(magic), ver, hex(dst))
        assert h[0] == HELLO_MAGIC and h[1] == 3 and h[3] == MY_NID, h
        answer_hello(conn, h, MY_NID, PID_LUSTRE, INCARNATION)
        while True:
            ktype, _csum, zc0, _zc1 = recv_ksock_hdr(conn)
            if ktype == KSOCK_NOOP:
                continue
            assert ktype == KSOCK_LNET, hex(ktype)
            hdr = recv_exact(conn, 72)
            dnid, snid, dpid, spid, mtype, plen = unpack_lnet_hdr(hdr)
            payload = recv_exact(conn, plen) if plen else b""
            if zc0:  # zero-copy sender: acknowledge the cookie
                with send_lock:
                    conn.sendall(ksock_hdr(KSOCK_NOOP, 0, zc0))
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
                lh = lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_REPLY, len(info), ret_wmd)
                with send_lock:
                    conn.sendall(ksock_hdr() + lh + info)
                continue
            if mtype != LNET_PUT:
                continue
            match_bits, _hdata, portal, _off = struct.unpack("<QQII", hdr[48:72])
            if portal not in (PORTAL_FRAMEWORK, PORTAL_REQUEST) or len(payload) < 160:
                continue
            out = handle_srpc(payload)
            if not out:
                continue
            rpyid, reply = out
            msg = put_msg(WMD_NONE, rpyid, 0, PORTAL_RDMA, 0)
            lh = lnet_hdr(snid, MY_NID, spid, PID_LUSTRE, LNET_PUT, len(reply), msg)
            with send_lock:
                conn.sendall(ksock_hdr() + lh + reply)
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
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
