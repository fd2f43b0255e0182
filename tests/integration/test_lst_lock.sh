#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lst console's session lock is never held across an RPC: while add_group waits on a node that
# accepts the connection and never answers (a silent peer), the other lst commands of the same session
# answer at once, and the slow add_group then fails alone with one line. Loopback block 127.145.0.x.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
sst_init 145
sst_node n1 145 1 4096
SILENT_NID=$(ul_addr 145 2)@tcp
export ULNET_NODE
ULNET_NODE=$(ul_sock n1)

lst() # lst OUT ARGS...: one console invocation, status in UL_STATUS
{
	local out=$1
	shift
	ul_run "$out" "$out.err" timeout 60 "$SST" "$@"
}
ok() { lst "$UL_TMP/o" "$@"; [[ $UL_STATUS == 0 ]] || ul_fail "'$*': status $UL_STATUS: $(cat "$UL_TMP/o" "$UL_TMP/o.err")"; }

ul_step "a silent peer on $SILENT_NID: accepts, never answers"
"$UL_PYTHON" - "$(ul_addr 145 2)" >"$UL_TMP/silent.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 988))
s.listen(16)
print("listening", flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    print("connected", flush=True)
PY
SILENT=$!
UL_ATEXIT+=("kill $SILENT 2>/dev/null")
for _ in $(seq 200); do grep -q listening "$UL_TMP/silent.out" && break; sleep 0.05; done
grep -q listening "$UL_TMP/silent.out" || ul_fail "silent peer did not start: $(cat "$UL_TMP/silent.out")"

ul_step "session with a 5 s RPC timeout; add_group on the silent peer in the background"
ok new_session locks --timeout 5
"$SST" add_group slow "$SILENT_NID" >"$UL_TMP/slow.out" 2>"$UL_TMP/slow.err" &
SLOW=$!
for _ in $(seq 200); do grep -q connected "$UL_TMP/silent.out" && break; sleep 0.05; done
grep -q connected "$UL_TMP/silent.out" || ul_fail "add_group never reached the silent peer"

ul_step "the session answers while add_group waits"
ok show_session
grep -q '^session locks: ' "$UL_TMP/o" || ul_fail "show_session: $(cat "$UL_TMP/o")"
ok add_batch b1
ok list_batch
grep -q '^b1: 0 test(s), idle' "$UL_TMP/o" || ul_fail "list_batch: $(cat "$UL_TMP/o")"
ok list_group
kill -0 "$SLOW" 2>/dev/null || ul_fail "add_group ended before the other commands were answered: the test proves nothing ($(cat "$UL_TMP/slow.err"))"

ul_step "the slow add_group fails alone, with one line"
wait "$SLOW"
st=$?
[[ $st != 0 ]] || ul_fail "add_group on a silent peer succeeded: $(cat "$UL_TMP/slow.out")"
ul_one_line "$UL_TMP/slow.err" "group slow: .*group not added"
ok list_group
grep -q '^total 0 group' "$UL_TMP/o" || ul_fail "a failed group was kept: $(cat "$UL_TMP/o")"
ok end_session
ul_step "ok"
