#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw client of the shm provider's CM socket (src/fabric/shm/shm_cm.c), independent of the C
code: connects to the abstract name "ulnet-shm/<IPv4>:<port>" and says what the node did before any
CONNREQ: "rejected <status>" (a REJECT: magic "USM2", type 3, status as a signed errno), "closed", or
"waiting" (no answer within 1 s: the node let the connection in and waits for a CONNREQ).
Usage: shm_cm_client.py IPV4 PORT"""
import socket
import struct
import sys

MAGIC, REJECT, SIZE = 0x324D5355, 3, 80


def main():
    ip, port = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(b"\0" + f"ulnet-shm/{ip}:{port}".encode())
    s.settimeout(1.0)
    try:
        b = s.recv(SIZE + 1)
    except socket.timeout:
        print("waiting")
        return 0
    except ConnectionResetError:
        print("closed")
        return 0
    if not b:
        print("closed")
        return 0
    if len(b) != SIZE:
        print(f"bad length {len(b)}")
        return 1
    magic, typ = struct.unpack_from("<IB", b, 0)
    (status,) = struct.unpack_from("<i", b, 8)
    if magic != MAGIC or typ != REJECT:
        print(f"unexpected message magic {magic:#x} type {typ}")
        return 1
    print(f"rejected {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
