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

addr, node_ip = sys.argv[1], sys.argv[2]
SOCKLND, PID, ULNT = 2, 12345, 0x554c4e54
MAGIC = 0x45726963


def nid(ip):
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]


me, node = nid(addr), nid(node_ip)
replies, cv = {}, threading.Condition()
send_lock = threading.Lock()


def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def reader(s):
    try:
        while True:
            ktype, _c, zc0, _z1 = struct.unpack("<IIQQ", recv_exact(s, 24))
            if ktype == 0xc0:
                continue
            hdr = recv_exact(s, 72)
            _d, _s, _dp, _sp, mtype, plen = struct.unpack("<QQIIII", hdr[:32])
            payload = recv_exact(s, plen) if plen else b""
            if zc0:
                with send_lock:
                    s.sendall(struct.pack("<IIQQ", 0xc0, 0, 0, zc0))
            if mtype == 1:  # PUT: a reply on portal 52, match bits = our rpyid
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
            recv_exact(c, 16)
            _m, _v, src, _d, spid, _dp, sinc, _di, ctype, _n = struct.unpack("<IIQQIIQQII", recv_exact(c, 56))
            c.sendall(struct.pack("<IIQQIIQQII", MAGIC, 3, me, src, PID, spid, 78, sinc,
                                  {2: 3, 3: 2}.get(ctype, ctype), 0))
            threading.Thread(target=reader, args=(c,), daemon=True).start()
        except (EOFError, OSError):
            c.close()


def connect_privileged():
    for port in range(1023, 511, -1):
        s = socket.socket()
        try:
            s.bind((addr, port))
            s.connect((node_ip, 988))
            return s
        except OSError:
            s.close()
    raise OSError("no privileged port free")


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 988))
ls.listen(8)
threading.Thread(target=accept_loop, args=(ls,), daemon=True).start()
conns = []
for ctype in (1, 2, 3):
    s = connect_privileged()
    s.sendall(struct.pack("<IIQ", 0xacce7100, 1, node))
    s.sendall(struct.pack("<IIQQIIQQII", MAGIC, 3, me, node, PID, 0, 78, 0, ctype, 0))
    recv_exact(s, 56)
    threading.Thread(target=reader, args=(s,), daemon=True).start()
    conns.append(s)

SID = struct.pack("<Qq", me, 12345)
next_id = [1]


def call(mtype, body_after_rpyid, r0=0, r1=0, wait=True):
    """Send request @mtype to the framework portal; return (status, reserved0, reserved1)."""
    rpyid = next_id[0]
    next_id[0] += 1
    msg = (struct.pack("<IIIIII", 0xeeb0f00d, 1, mtype, r0, r1, 1) + struct.pack("<Q", rpyid)
           + body_after_rpyid).ljust(160, b"\0")
    hdr = struct.pack("<QQIIII", node, me, PID, PID, 1, 160) + b"\xff" * 16
    hdr += struct.pack("<QQII", 1 if mtype == 0 else 4 if mtype == 8 else 2, 0, 51, 0)
    with send_lock:
        conns[0].sendall(struct.pack("<IIQQ", 0xc1, 0, 0, 0) + hdr + msg)
    if not wait:
        return None
    with cv:
        if not cv.wait_for(lambda: rpyid in replies, timeout=10):
            raise SystemExit("no reply to request type %d" % mtype)
        rep = replies.pop(rpyid)
    _m, _v, _t, q0, q1, _f = struct.unpack("<IIIIII", rep[:24])
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
