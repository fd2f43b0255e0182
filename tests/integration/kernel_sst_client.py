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

addr, state_path = sys.argv[1], sys.argv[2]
refuse = int(sys.argv[sys.argv.index("--refuse-tests") + 1]) if "--refuse-tests" in sys.argv else 0

SOCKLND, PID_LUSTRE, PAGE = 2, 12345, 4096
ACCEPTOR_MAGIC, HELLO_MAGIC, SRPC_MAGIC = 0xacce7100, 0x45726963, 0xeeb0f00d
KSOCK_NOOP, KSOCK_LNET = 0xc0, 0xc1
LNET_PUT, LNET_GET, LNET_REPLY = 1, 2, 3
PING_MATCHBITS, PING_MAGIC, PING_FEATS = 0x8000000000000000, 0x70696E67, 0x01 | 0x02 | 0x08 | 0x10
LOLND, NI_UP = 9, 0x15aac0de
PORTAL_REQUEST, PORTAL_FRAMEWORK, PORTAL_RDMA = 50, 51, 52
MKSN, RMSN, BATCH, STAT, TEST, DEBUG, BRW = 0, 2, 4, 6, 8, 10, 12
EINVAL = 22


def nid_of(ip):
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]


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


def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def kernel_brw_client_check(length, offset):
    """What a kernel brw client does with (len, offset): 'ok', 'einval' or 'crash'."""
    if offset % 8:
        return "einval"
    npg = (length + PAGE - 1) // PAGE
    laid_out = (offset % PAGE + length + PAGE - 1) // PAGE
    counted = (offset + length + PAGE - 1) // PAGE if offset >= PAGE else laid_out
    return "crash" if laid_out > npg or counted > npg else "ok"


def srpc_reply(req_type, feats, body):
    msg = struct.pack("<IIIIII", SRPC_MAGIC, 1, req_type + 1, 0, 0, feats) + body
    return msg.ljust(160, b"\0")


def handle_srpc(payload):
    """One request; returns (rpyid, reply bytes) or None when it gets no reply."""
    magic, ver, mtype, _r0, _r1, feats = struct.unpack("<IIIIII", payload[:24])
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
        magic, ver, dst = struct.unpack("<IIQ", recv_exact(conn, 16))
        assert magic == ACCEPTOR_MAGIC and ver == 1 and dst == MY_NID, (hex(magic), ver, hex(dst))
        h = recv_exact(conn, 56)
        hm, hv, src, hdst, spid, _dpid, sinc, _dinc, ctype, nips = struct.unpack("<IIQQIIQQII", h)
        assert hm == HELLO_MAGIC and hv == 3 and hdst == MY_NID, h.hex()
        recv_exact(conn, 4 * nips) if nips else None
        mine = {2: 3, 3: 2}.get(ctype, ctype)  # the receiver inverts bulk in/out
        conn.sendall(struct.pack("<IIQQIIQQII", HELLO_MAGIC, 3, MY_NID, src, PID_LUSTRE, spid,
                                 INCARNATION, sinc, mine, 0))
        while True:
            ktype, _csum, zc0, _zc1 = struct.unpack("<IIQQ", recv_exact(conn, 24))
            if ktype == KSOCK_NOOP:
                continue
            assert ktype == KSOCK_LNET, hex(ktype)
            hdr = recv_exact(conn, 72)
            dnid, snid, dpid, spid, mtype, plen = struct.unpack("<QQIIII", hdr[:32])
            payload = recv_exact(conn, plen) if plen else b""
            if zc0:  # zero-copy sender: acknowledge the cookie
                with send_lock:
                    conn.sendall(struct.pack("<IIQQ", KSOCK_NOOP, 0, 0, zc0))
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
                lh = struct.pack("<QQIIII", snid, MY_NID, spid, PID_LUSTRE, LNET_REPLY, len(info))
                lh += ret_wmd + b"\0" * 24
                with send_lock:
                    conn.sendall(struct.pack("<IIQQ", KSOCK_LNET, 0, 0, 0) + lh + info)
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
            lh = struct.pack("<QQIIII", snid, MY_NID, spid, PID_LUSTRE, LNET_PUT, len(reply))
            lh += b"\xff" * 16 + struct.pack("<QQII", rpyid, 0, PORTAL_RDMA, 0)
            with send_lock:
                conn.sendall(struct.pack("<IIQQ", KSOCK_LNET, 0, 0, 0) + lh + reply)
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
