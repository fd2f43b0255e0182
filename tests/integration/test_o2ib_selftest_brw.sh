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
# Last, brw of 16 MiB + 1 (above LNET_MTU: the core's rendezvous of 1 MiB messages, docs/large.md).
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "$SRC/tests/integration/sst_common.sh"
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"

COPY_THREAD=${COPY_THREAD:-0}
# n1 serves /metrics: its per-peer RDMA families must say what peer show -v says
UL_O2IB_EXTRA=$'metrics:\n    listen: '"$(ul_addr 252 1):9669" ul_o2ib_node n1 252 1 4096 10 "device: {copy_thread: $COPY_THREAD}"
ul_o2ib_node n2 252 2 65536 10 "device: {copy_thread: $COPY_THREAD}"
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

ul_step "the endpoint's RDMA families are peer show -v's rdma block"
ul_ctl n1 peer show -v --nid "$N2" --json >"$UL_TMP/peer.json" || ul_fail "peer show -v"
"$UL_PYTHON" - "http://$(ul_addr 252 1):9669/metrics" "$UL_TMP/peer.json" "$N2" <<'PY' || ul_fail "RDMA families differ from peer show -v"
import json, re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
rdma = json.load(open(sys.argv[2]))["peer"][0]["peer ni"][0]["rdma"]
def sample(name, extra=""):
    m = re.search(r'^%s\{[^}]*nid="%s"%s\} (\d+)$' % (name, re.escape(sys.argv[3]), extra), text, re.M)
    assert m, "no %s for %s" % (name, sys.argv[3])
    return int(m.group(1))
for k in ("renegotiations", "post_rejects", "window_waits", "reg_cache_hits", "reg_cache_misses", "reg_cache_evictions"):
    assert sample("ulnet_peer_rdma_%s_total" % k) == rdma[k], k
total = 0
for b in rdma["buckets"]:
    lb = ',max_bytes="%d"' % b["max_bytes"]
    for fam, key in (("transfers_total", "transfers"), ("write_wrs_total", "wrs"), ("sinks_total", "sinks"),
                     ("bounces_total", "bounces"), ("registrations_total", "registrations"),
                     ("wrs_per_transfer_max", "max_wrs")):
        assert sample("ulnet_peer_rdma_" + fam, lb) == b[key], (fam, b)
    total += b["transfers"]
assert total > 0, "no RDMA transfer counted"
print("RDMA transfers to the peer: %d" % total, file=sys.stderr)
open(sys.argv[2] + ".metrics", "w").write(text)
PY
if command -v promtool >/dev/null; then
	promtool check metrics <"$UL_TMP/peer.json.metrics" >"$UL_TMP/promtool.out" 2>&1 || ul_fail "promtool: $(cat "$UL_TMP/promtool.out")"
fi

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

ul_step "brw above 1 MiB over o2ib (issue #33): 16 MiB + 1 at offset 4097, write and read, check=full"
for rw in write read; do
	sst_run "$UL_TMP/big" n1 --json brw "$rw" --from "$N1" --to "$N2" --size 16777217 --offset 4097 --check full \
		--count 3 --concurrency 2
	[[ $UL_STATUS == 0 ]] || ul_fail "16 MiB + 1 $rw: status $UL_STATUS: $(cat "$UL_TMP/big" "$UL_TMP/big.err")"
	ul_json "$UL_TMP/big" "j['ok'] and j['rpcs'] == 3 and j['bytes'] == 3 * 16777217 and sum(j['errors'].values()) == 0"
done

ul_step "PASS"
