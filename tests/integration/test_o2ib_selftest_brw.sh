#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The o2ib scenario (sc_o2ib of tests/integration/scenarios.sh, which the VM lane runs unchanged on
# the verbs provider) over the shm provider between two ulnetd on 127.252.0.{1,2}@o2ib with 4 KiB
# and 64 KiB pages, both directions: ping; ulnet-selftest brw read and write, check=full, zero errors,
# at offsets 0, 1, 4097, 65537 of sizes 1, 4097, 65536, 1 MiB - offset and 1 MiB; 1 s of 1 MiB
# writes 8 in flight; `peer show -v` shows the RDMA counters by size bucket; selftest ping. Payloads above 3976 bytes take
# the PUT_REQ/GET_REQ rendezvous (RDMA WRITE); the bulk buffers are the shm provider's memfd memory
# (ulnet_mem_alloc), which the other node maps (RDMA by memcpy). COPY_THREAD=1: the same with the
# provider's copy thread on both nodes (lnd tunable device.copy_thread), which net show -v names.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"

COPY_THREAD=${COPY_THREAD:-0}
ul_o2ib_pair 252 10 "device: {copy_thread: $COPY_THREAD}"
for n in n1 n2; do
	ul_ctl "$n" net show -v --json >"$UL_TMP/net.json"
	ul_json "$UL_TMP/net.json" "j['net'][-1]['local NI(s)'][0]['fabric']['device']['copy_thread'] == $COPY_THREAD"
done
N1=$(ul_addr 252 1)@o2ib
N2=$(ul_addr 252 2)@o2ib

# the o2ib scenario of tests/integration/scenarios.sh from each node to the other (the VM lane runs
# the same functions between its x86_64 and ppc64le nodes on verbs): ping, the brw matrix (offsets
# 0, 1, 4097, 65537 of sizes 1, 4097, 65536, 1 MiB - offset, 1 MiB; write and read, check=full),
# 1 s of 1 MiB writes 8 in flight, the RDMA counters of peer show -v, selftest ping
ul_scenarios o2ib n1="$N1" n2="$N2"
sc_o2ib n1 n2
sc_o2ib n2 n1

ul_step "bulk buffers are the provider's memfd memory, and each node mapped the other's (RDMA by memcpy)"
"$UL_PYTHON" - "$(ul_pid n1)" "$(ul_pid n2)" <<'PY' || ul_fail "selftest buffers are not mapped across the nodes"
import os, sys
def owned(pid):  # inodes of the memfds from the shm provider's mem_alloc this process holds
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:ulnet-shm-mem"):
                out.add(os.stat(f"/proc/{pid}/fd/{fd}").st_ino)
        except OSError:
            pass
    return out
def mapped(pid):
    return {int(l.split()[4]) for l in open(f"/proc/{pid}/maps") if "/memfd:ulnet-shm-mem" in l}
a, b = sys.argv[1], sys.argv[2]
print(f"n1 owns {len(owned(a))} memfds, maps {len(mapped(a) & owned(b))} of n2's; "
      f"n2 owns {len(owned(b))}, maps {len(mapped(b) & owned(a))} of n1's", file=sys.stderr)
sys.exit(0 if owned(a) and owned(b) and mapped(a) & owned(b) and mapped(b) & owned(a) else 1)
PY

ul_step "PASS"
