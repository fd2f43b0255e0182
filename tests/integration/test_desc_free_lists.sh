#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two ulnetd on 127.150.0.{1,2} (tcp, the second with busy_poll_us): after a warm-up, 1000 more pings
# hand out thousands of message descriptors (`stats show -v`: desc_gets) while the heap is asked for
# next to none (desc_heap_allocs): messages, ACKs and tx descriptors come from free lists. Without
# -v the counters are not shown. -v also shows the node lock's hold-time histogram.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
T=$UL_TMP

for n in 1 2; do
	extra=""
	(( n == 2 )) && extra=$'node:\n    busy_poll_us: 20'
	ul_start_node "n$n" <<YAML
$extra
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr 150 "$n")@tcp
YAML
done

stats() { # NAME OUT
	ul_ctl "$1" stats show -v --json >"$2" || ul_fail "stats show -v on $1"
}

ul_step "warm up"
ul_ctl n1 ping "$(ul_addr 150 2)@tcp" --count 100 --timeout_ms 5000 >/dev/null || ul_fail "warm-up ping failed"
stats n1 "$T/a0.json"
stats n2 "$T/b0.json"

ul_step "1000 pings"
ul_ctl n1 ping "$(ul_addr 150 2)@tcp" --count 1000 --timeout_ms 5000 >/dev/null || ul_fail "ping failed"
stats n1 "$T/a1.json"
stats n2 "$T/b1.json"

# each ping: n1 a GET and the REPLY in (2 messages + 1 tx); n2 the REPLY (1 message + 1 tx)
"$UL_PYTHON" - "$T" <<'PY' || ul_fail "descriptors came from the heap per message: $(cat "$T"/[ab][01].json)"
import json, sys
t = sys.argv[1]
ld = lambda n: json.load(open(f"{t}/{n}.json"))["statistics"]
for (x, y, want) in (("a0", "a1", 3000), ("b0", "b1", 2000)):
    a, b = ld(x), ld(y)
    gets = b["desc_gets"] - a["desc_gets"]
    heap = b["desc_heap_allocs"] - a["desc_heap_allocs"]
    print(f"{y}: desc_gets +{gets}, desc_heap_allocs +{heap}")
    assert gets >= want, (y, gets)
    assert heap <= 4, (y, heap)
# the lock hold-time histogram counted the holds of those pings, and its maximum lies in its buckets
h = ld("a1")["lock_hold_us"]
assert sum(h.values()) - sum(ld("a0")["lock_hold_us"].values()) >= 1000, h
assert ld("a1")["lock_hold_max_ns"] > 0
PY

ul_step "plain stats show hides them"
ul_ctl n1 stats show --json >"$T/plain.json" || ul_fail "stats show"
ul_json "$T/plain.json" "'desc_gets' not in j['statistics'] and 'send_count' in j['statistics']"
echo "PASS"
