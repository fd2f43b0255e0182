#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 13 "hang": a selftest run toward a NID that no local NI reaches (and toward an address on our
# net where nothing listens) ends with an error naming the cause instead of waiting forever, because
# every failed send ends in exactly one event carrying its error; SIGTERM then ends ulnetd at once.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 212 1)
SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
ul_start_node a <<EOF
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
EOF

for to in 10.9.9.9@tcp1 "$(ul_addr 212 77)@tcp"; do
	ul_step "brw read toward $to"
	t0=$SECONDS
	ul_run "$UL_TMP/o" "$UL_TMP/e" timeout 60 "$SST" --node "$(ul_sock a)" brw read --from "$A@tcp" --to "$to" \
		--size 4k --duration 2
	elapsed=$((SECONDS - t0))
	(( UL_STATUS != 124 )) || ul_fail "the run toward $to hung (killed after 60 s)"
	(( UL_STATUS != 0 )) || ul_fail "the run toward $to succeeded"
	grep -q "No route to host" "$UL_TMP/o" "$UL_TMP/e" ||
		ul_fail "the run toward $to did not name the cause: $(cat "$UL_TMP/o" "$UL_TMP/e")"
	ul_step "ended with status $UL_STATUS after $elapsed s"
done
ul_step "SIGTERM ends ulnetd within 5 s"
ul_stop_node a TERM 5 # fails the test if ulnetd still runs after 5 s
(( UL_STATUS == 0 )) || ul_fail "ulnetd exited with $UL_STATUS after SIGTERM"
ul_step "ok"
