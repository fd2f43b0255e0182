#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Large payloads (issue #33, docs/large.md) in one run (not part of the test suite): between the same
# two nodes (two processes, bench/big_put.c), one 16 MiB Put against sixteen 1 MiB Puts in flight at
# once, each waiting for its ACKs, alternated ROUNDS times for SECONDS each; the ratio of the means
# (goal >= 1.0), over tcp and over o2ib on the shm provider; then each node's RSS while it moves
# 64 MiB Puts and Gets, at 4 KiB and at 64 KiB pages (RSS after the 64 MiB buffer, the peak, and what
# is anonymous against shared memory at the end: the shm provider maps its peer's memfd buffers, so a
# node's RSS counts the pages of its peer's buffer it copied from or to).
# Usage: bench/big_put.sh [SECONDS]   (BUILD=build dir, default ./build; ROUNDS=3). Nodes on
#        127.226.200.{1,2} (tcp, port 988: root) and 127.227.200.{1,2} (o2ib, shm).
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$SRC/build}
SECS=${1:-2}
ROUNDS=${ROUNDS:-3}
ninja -C "$BUILD" bench/big_put >/dev/null
BIN=$BUILD/bench/big_put
TMP=$(mktemp -d "${TMPDIR:-/tmp}/big_put.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "big_put: $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), load: $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # NET BLOCK_OCTET PAGE
	local net=$1 oct=$2 page=$3 a b tp
	a="127.$oct.200.1@$net"
	b="127.$oct.200.2@$net"
	"$BIN" target "$net" "$b" "$page" >"$TMP/target.log" 2>&1 &
	tp=$!
	for _ in $(seq 100); do grep -q '^ready' "$TMP/target.log" && break; sleep 0.1; done
	"$BIN" initiator "$net" "$a" "$page" "$b" "$SECS" "$ROUNDS" 2>"$TMP/init.err" | sed 's/^/  /' || {
		cat "$TMP/init.err" >&2
		kill -TERM "$tp"
		return 1
	}
	kill -TERM "$tp"
	wait "$tp" || true
	grep '^target' "$TMP/target.log" | sed 's/^/  /'
}

for net in tcp o2ib; do
	oct=226
	[ "$net" = o2ib ] && oct=227
	for page in 4096 65536; do
		echo "$net, both nodes at $page-byte pages:"
		run "$net" "$oct" "$page"
	done
done
