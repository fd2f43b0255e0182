#!/usr/bin/env bash
# The demo: two ulnetd nodes on loopback addresses, one with 4 KiB and one with 64 KiB pages, each
# with a tcp NI and an o2ib NI (shm RDMA provider). They ping each other over both, then run brw
# write and read of 1 MiB at an unaligned offset with full data check in both directions over both
# LNDs, printed as one results table, and show the RDMA plan of one such transfer.
set -euo pipefail
BUILD=${1:-build}
BUILD=$(cd "$BUILD" && pwd)
ULNETD=$BUILD/tools/ulnetd/ulnetd
ULNETCTL=$BUILD/tools/ulnetctl/ulnetctl
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
TMP=$(mktemp -d /tmp/ulnet-demo.XXXXXX)
A=127.77.0.1 B=127.77.0.2
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

start() { # name addr page_size
	mkdir -p "$TMP/$1"
	cat >"$TMP/$1/node.yaml" <<YAML
node:
    page_size: $3
    control: $TMP/$1/ctl.sock
net:
    - net type: tcp
      local NI(s):
        - nid: $2@tcp
    - net type: o2ib
      local NI(s):
        - nid: $2@o2ib
          lnd tunables:
              provider: shm
YAML
	"$ULNETD" -c "$TMP/$1/node.yaml" >"$TMP/$1/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		"$ULNETCTL" --node "$TMP/$1/ctl.sock" net show >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "demo: node $1 did not start:" >&2
	cat "$TMP/$1/log" >&2
	exit 1
}

start n4k $A 4096
start n64k $B 65536
echo "== nodes: $A@tcp,o2ib (page_size 4096), $B@tcp,o2ib (page_size 65536)"
for net in tcp o2ib; do
	"$ULNETCTL" --node "$TMP/n4k/ctl.sock" ping "$B@$net"
	"$ULNETCTL" --node "$TMP/n64k/ctl.sock" ping "$A@$net"
done
if [ -x "$SST" ]; then
	rc=0
	echo "== brw, 1 MiB at offset 4097, check=full, both directions, tcp and o2ib (2 s each)"
	: >"$TMP/results.json"
	for net in tcp o2ib; do
		for pair in "n4k $A $B" "n64k $B $A"; do
			read -r node from to <<<"$pair"
			for op in write read; do
				ULNET_NODE=$TMP/$node/ctl.sock "$SST" brw $op --from "$from@$net" --to "$to@$net" \
					--size 1M --offset 4097 --concurrency 4 --duration 2 --check full --json \
					>>"$TMP/results.json" || rc=1
			done
		done
	done
	python3 - "$TMP/results.json" "$A" "$B" <<'PY'
import json, sys
page = {sys.argv[2] + "@tcp": " (4K pages)", sys.argv[3] + "@tcp": " (64K pages)",
        sys.argv[2] + "@o2ib": " (4K pages)", sys.argv[3] + "@o2ib": " (64K pages)"}
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
hdr = ("test", "from", "to", "direction", "MB/s", "MiB/s", "msg/s", "p50 us", "p99 us", "max us", "errors", "ok")
out = [hdr]
for r in rows:
    e = r["errors"]
    out.append((r["test"], r["from"] + page.get(r["from"], ""), r["to"] + page.get(r["to"], ""), r["direction"], "%.1f" % r["MBps"], "%.1f" % r["MiBps"],
                "%.1f" % r["rate"], str(r["latency_us"]["p50"]), str(r["latency_us"]["p99"]),
                str(r["latency_us"]["max"]), str(sum(e.values())), "yes" if r["ok"] else "NO"))
w = [max(len(row[i]) for row in out) for i in range(len(hdr))]
for i, row in enumerate(out):
    print("  ".join(c.ljust(w[j]) for j, c in enumerate(row)))
    if i == 0:
        print("  ".join("-" * x for x in w))
PY
	echo "== fragmentation stats the 4K node kept for its o2ib peer (ulnetctl peer show -v)"
	"$ULNETCTL" --node "$TMP/n4k/ctl.sock" peer show -v --nid "$B@o2ib" || rc=1
	echo "== the o2ib RDMA plan of one such transfer: 1 MiB from 4 KiB kiov pages into a 64 KiB-page sink at"
	echo "   offset 4097 described page by page (map_on_demand 0), one SGE per WR, 16 fragments negotiated"
	"$ULNETCTL" plan --len 1M --src-form kiov --src-page-size 4096 --dst-page-size 65536 --dst-offset 4097 \
		--dst-mod 0 --max-send-sge 1 --max-frags 16 || rc=1
	exit $rc
fi
