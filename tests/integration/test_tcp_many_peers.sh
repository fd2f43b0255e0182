#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hundreds of peers on one node, one loop thread: 300 independent socklnd connections (each its own
# source address and NID) ping one ulnetd at once; every one gets its reply, the node lists 300 peers
# and still answers a second ulnetd afterwards.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 90 1)
B=$(ul_addr 90 2)
for n in a:$A b:$B; do
	ul_start_node "${n%%:*}" <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: ${n#*:}@tcp
EOF
done
ulimit -n 4096 2>/dev/null || true
ul_step "300 peers ping $A@tcp concurrently"
"$UL_PYTHON" "$SRC/tests/integration/many_peers.py" "$A" 300 || ul_fail "many peers"
ul_ctl a peer show --json >"$UL_TMP/peers.json"
ul_json "$UL_TMP/peers.json" "len(j['peer']) >= 300"
threads=$(ls "/proc/$(ul_pid a)/task" | wc -l)
(( threads < 16 )) || ul_fail "ulnetd runs $threads threads for 300 peers"
ul_step "the node still serves another ulnetd ($threads threads)"
ul_ctl b ping "$A@tcp" >/dev/null || ul_fail "ping after the crowd"
ul_step "ok"
