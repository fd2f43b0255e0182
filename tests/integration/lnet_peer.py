# SPDX-License-Identifier: MIT
# Wire helpers shared by the Python socklnd peers of the integration tests (many_peers.py,
# flood_gets.py, kernel_sst_client.py, kernel_sst_server.py, kernel_sst_console.py, sst_flood.py,
# sst_hostile_console.py). Written from
# lnet-wire.md §2.3 (LNet header), §2.6 (acceptor, HELLO V3, ksock_msg) and docs/selftest.md §1 (srpc
# message), independently of ulnet's C encoders, so the tests stay an outside oracle. Pure packing plus
# blocking socket reads; no policy: each script decides what to check and what to answer.
import socket, struct

SOCKLND, PID_LUSTRE = 2, 12345
ACCEPTOR_PORT, ACCEPTOR_MAGIC, ACCEPTOR_VERSION = 988, 0xacce7100, 1
HELLO_MAGIC, HELLO_V3 = 0x45726963, 3
CONN_CONTROL, CONN_BULK_IN, CONN_BULK_OUT = 1, 2, 3
KSOCK_NOOP, KSOCK_LNET = 0xc0, 0xc1
LNET_PUT, LNET_GET, LNET_REPLY = 1, 2, 3
SRPC_MAGIC, SRPC_VERSION, SRPC_MSG_SIZE = 0xeeb0f00d, 1, 160

ACCEPTOR_FMT = "<IIQ"                   # magic, version, dst nid (16 bytes)
HELLO_FMT = "<IIQQIIQQII"               # magic, version, src/dst nid, src/dst pid, src/dst inc, ctype, nips
KSOCK_FMT = "<IIQQ"                     # type, csum, zc_cookies[0], zc_cookies[1]
LNET_FMT = "<QQIIII"                    # dst nid, src nid, dst pid, src pid, type, payload length
SRPC_HEAD_FMT = "<IIIIII"               # magic, version, type, reserved0, reserved1, features
HELLO_SIZE, KSOCK_SIZE, LNET_HDR_SIZE, LNET_MSG_SIZE = 56, 24, 72, 40
WMD_NONE = b"\xff" * 16                 # "no ACK wanted" wire MD handle


def nid(ip):
    """The socklnd (tcp) NID of a dotted IPv4 address."""
    return (SOCKLND << 48) | struct.unpack("!I", socket.inet_aton(ip))[0]


def recv_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError("connection closed after %d of %d bytes" % (len(b), k))
        b += c
    return b


def acceptor_request(dst_nid):
    return struct.pack(ACCEPTOR_FMT, ACCEPTOR_MAGIC, ACCEPTOR_VERSION, dst_nid)


def hello(src_nid, dst_nid, src_pid, dst_pid, src_inc, dst_inc, ctype):
    """A HELLO V3 with no IP list (nips 0, as kernels send it)."""
    return struct.pack(HELLO_FMT, HELLO_MAGIC, HELLO_V3, src_nid, dst_nid, src_pid, dst_pid, src_inc,
                       dst_inc, ctype, 0)


def recv_hello(s):
    """Read a HELLO and its IP list; returns the 10 header fields of HELLO_FMT."""
    h = struct.unpack(HELLO_FMT, recv_exact(s, HELLO_SIZE))
    if h[9]:
        recv_exact(s, 4 * h[9])
    return h


def peer_ctype(ctype):
    """The connection type the passive side answers: bulk in and bulk out swap sides."""
    return {CONN_BULK_IN: CONN_BULK_OUT, CONN_BULK_OUT: CONN_BULK_IN}.get(ctype, ctype)


def active_handshake(s, src_nid, dst_nid, src_pid, src_inc, ctype):
    """Connector side on a connected socket: acceptor request, our HELLO, then the node's HELLO."""
    s.sendall(acceptor_request(dst_nid))
    s.sendall(hello(src_nid, dst_nid, src_pid, 0, src_inc, 0, ctype))
    return recv_hello(s)


def recv_connreq(s):
    """Acceptor side, first half: returns (acceptor request fields, peer HELLO fields), unchecked."""
    req = struct.unpack(ACCEPTOR_FMT, recv_exact(s, 16))
    return req, recv_hello(s)


def answer_hello(s, peer_hello, my_nid, my_pid, my_inc):
    """Acceptor side, second half: our HELLO back to the peer whose HELLO fields are @peer_hello."""
    _m, _v, src, _d, spid, _dp, sinc, _di, ctype, _n = peer_hello
    s.sendall(hello(my_nid, src, my_pid, spid, my_inc, sinc, peer_ctype(ctype)))


def passive_handshake(s, my_nid, my_pid, my_inc):
    """Acceptor side, for a peer that does not check what connects to it: read, then answer."""
    req, h = recv_connreq(s)
    answer_hello(s, h, my_nid, my_pid, my_inc)
    return req, h


def connect_privileged(addr, node_ip, rcvbuf=0):
    """As the kernel connector: bind the first free port downwards from 1023 (TIME_WAIT from a rerun)."""
    for port in range(1023, 511, -1):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            s.bind((addr, port))
            s.connect((node_ip, ACCEPTOR_PORT))
            return s
        except OSError:
            s.close()
    raise OSError("no privileged port free")


def ksock_hdr(ktype=KSOCK_LNET, zc_req=0, zc_ack=0):
    return struct.pack(KSOCK_FMT, ktype, 0, zc_req, zc_ack)


def recv_ksock_hdr(s):
    """Returns (type, csum, zc_cookies[0], zc_cookies[1])."""
    return struct.unpack(KSOCK_FMT, recv_exact(s, KSOCK_SIZE))


def lnet_hdr(dst_nid, src_nid, dst_pid, src_pid, mtype, plen, msg):
    """The 72-byte nid4 LNet header; @msg is the type's part of the 40-byte union (zero-padded)."""
    return struct.pack(LNET_FMT, dst_nid, src_nid, dst_pid, src_pid, mtype, plen) + msg.ljust(LNET_MSG_SIZE, b"\0")


def unpack_lnet_hdr(hdr):
    """Returns (dst nid, src nid, dst pid, src pid, type, payload length); hdr[32:72] is the msg union."""
    return struct.unpack(LNET_FMT, hdr[:32])


def get_msg(wmd, match_bits, portal, src_offset, sink_length):
    """GET: return wire MD (16 bytes), match bits, portal, src offset, sink length."""
    return wmd + struct.pack("<QIII", match_bits, portal, src_offset, sink_length)


def put_msg(ack_wmd, match_bits, hdr_data, portal, offset):
    """PUT: ACK wire MD (16 bytes), match bits, hdr data, portal, offset."""
    return ack_wmd + struct.pack("<QQII", match_bits, hdr_data, portal, offset)


def srpc_msg(mtype, body, feats, reserved0=0, reserved1=0):
    """A selftest RPC message (srpc_msg_t), zero-padded to its fixed 160 bytes."""
    head = struct.pack(SRPC_HEAD_FMT, SRPC_MAGIC, SRPC_VERSION, mtype, reserved0, reserved1, feats)
    return (head + body).ljust(SRPC_MSG_SIZE, b"\0")


def unpack_srpc_head(msg):
    """Returns (magic, version, type, reserved0, reserved1, features); the body starts at 24."""
    return struct.unpack(SRPC_HEAD_FMT, msg[:24])
