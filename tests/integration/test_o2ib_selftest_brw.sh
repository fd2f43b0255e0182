#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnet-selftest brw read and write over o2ib (shm provider) between two ulnetd on
# 127.252.0.{1,2}@o2ib with 4 KiB and 64 KiB pages, both directions, sizes 1, 4097, 65535 and
# 1 MiB at offsets 0, 1 and 4097 (where offset + size <= 1 MiB), check=full, zero errors; then
# selftest ping; `peer show -v` shows the RDMA counters by size bucket. Payloads above 3976 bytes take
# the PUT_REQ/GET_REQ rendezvous (RDMA WRITE); the bulk buffers are the shm provider's memfd memory
# (ulnet_mem_alloc), which the other node maps (RDMA by memcpy).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"

sst_o2ib_node n1 252 1 4096
sst_o2ib_node n2 252 2 65536
N1=$(ul_addr 252 1)@o2ib
N2=$(ul_addr 252 2)@o2ib

sst_brw_matrix n1 "$N1" n2 "$N2" "1 4097 65535 1048576" "0 1 4097"
ul_step "$SST_BRW_RUNS brw runs clean over o2ib"

ul_step "1 s of 1 MiB writes, 8 in flight"
ul_run "$UL_TMP/w.json" "$UL_TMP/w.err" "$SST" --node "$(ul_sock n1)" --json brw write --from "$N1" --to "$N2" \
	--size 1M --offset 4097 --concurrency 8 --duration 1 --check full
[[ $UL_STATUS == 0 ]] || ul_fail "1 s write: $(cat "$UL_TMP/w.json" "$UL_TMP/w.err")"
ul_json "$UL_TMP/w.json" "j['ok'] and j['MBps'] > 0"
printf '== brw write 1 MiB over o2ib/shm: %s MB/s\n' "$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["MBps"])' "$UL_TMP/w.json")" >&2

ul_step "peer show -v: the RDMA counters per size bucket"
ul_ctl n1 peer show -v --nid "$N2" --json >"$UL_TMP/peer.json" || ul_fail "peer show failed"
ul_json "$UL_TMP/peer.json" "(lambda r: r['post_rejects'] == 0 and r['buckets'][3]['max_bytes'] == 1048576 and r['buckets'][3]['transfers'] > 0 and r['buckets'][3]['wrs_per_transfer'] >= 1 and r['buckets'][3]['sges_per_wr'] >= 1)(j['peer'][0]['peer ni'][0]['rdma'])"
ul_ctl n1 peer show -v --nid "$N2" >"$UL_TMP/peer.txt" || ul_fail "peer show failed"
grep -q 'wrs_per_transfer' "$UL_TMP/peer.txt" || ul_fail "no RDMA counters in peer show -v: $(cat "$UL_TMP/peer.txt")"

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

ul_step "selftest ping"
ul_run "$UL_TMP/p.json" "$UL_TMP/p.err" "$SST" --node "$(ul_sock n1)" --json ping --from "$N1" --to "$N2" --count 50
[[ $UL_STATUS == 0 ]] || ul_fail "ping: $(cat "$UL_TMP/p.json" "$UL_TMP/p.err")"
ul_json "$UL_TMP/p.json" "j['ok'] and j['rpcs'] == 50"

ul_step "PASS"
