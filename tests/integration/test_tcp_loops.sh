#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# node: loops: 2 (issues #11, #29): a node with two loop threads talks to 8 peers, 4 it connects to and
# 4 that connect to it. Every ping both ways answers, stats show says 2 loops, and every watcher of the
# tcp NI (its listener and all 3 typed conns per peer, active or accepted) is on the NI's home loop:
# the loop that owns an NI owns its connections (docs/progress.md, Ownership). The first NI's home is
# loop 0, beside lo, the node's timers and the handlers; a second NI would get loop 1.
# Loopback block 127.170.0.x: the node .1, its peers .2 to .9.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 170 1)
node_yaml() { # LOOPS ADDR
	printf 'node:\n    loops: %s\nnet:\n    - net type: tcp\n      local NI(s):\n        - nid: %s@tcp\n' "$1" "$2"
}
ul_start_node a < <(node_yaml 2 "$A")
for i in $(seq 2 9); do
	ul_start_node "p$i" < <(node_yaml 1 "$(ul_addr 170 "$i")")
done
ul_step "a pings peers 2-5 (a connects), peers 6-9 ping a (they connect)"
for i in 2 3 4 5; do
	ul_ctl a ping "$(ul_addr 170 "$i")@tcp" --count 3 --timeout_ms 5000 >/dev/null || ul_fail "a -> p$i"
done
for i in 6 7 8 9; do
	ul_ctl "p$i" ping "$A@tcp" --count 3 --timeout_ms 5000 >/dev/null || ul_fail "p$i -> a"
done
ul_step "and back over the same conns"
for i in $(seq 2 9); do
	ul_ctl "p$i" ping "$A@tcp" --timeout_ms 5000 >/dev/null || ul_fail "p$i -> a (again)"
	ul_ctl a ping "$(ul_addr 170 "$i")@tcp" --timeout_ms 5000 >/dev/null || ul_fail "a -> p$i (again)"
done
ul_ctl a stats show -v --json >"$UL_TMP/stats.json"
ul_json "$UL_TMP/stats.json" 'j["statistics"]["loops"] == 2'
# 3 typed conns per peer and the listener, all on the NI's loop; none is lost
ul_json "$UL_TMP/stats.json" 'j["statistics"]["loop_watchers"] == [1 + 3 * 8, 0]'
ul_ctl p2 stats show --json >"$UL_TMP/stats_p2.json"
ul_json "$UL_TMP/stats_p2.json" 'j["statistics"]["loops"] == 1'
ul_step "ok: loop_watchers $("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["statistics"]["loop_watchers"])' "$UL_TMP/stats.json")"
