#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetctl import (ulnet_config_apply) on a running node, 127.223.0.x and 127.223.1.x: a file with
# every section ulnet supports (node, net, peer, route, routing, buffers, global, fault) is applied, and
# export then holds all of it; an export imported back changes nothing (export before = after);
# what ulnet does not support, or cannot change at run time, is refused with one line naming it and
# the node unchanged.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "its tcp nodes listen on port 988"
ul_init
A=$(ul_addr 223 1) B=127.223.1.1 G=127.223.1.2
ul_start_node n1 <<YAML
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
YAML
ul_start_node g <<YAML
net:
    - net type: tcp1
      local NI(s):
        - nid: $G@tcp1
YAML

export_of() { ul_ctl n1 export >"$1" || ul_fail "export"; }

ul_step "an export imported back changes nothing"
export_of "$UL_TMP/e0.yaml"
ul_ctl n1 import "$UL_TMP/e0.yaml" || ul_fail "import of the node's own export"
export_of "$UL_TMP/e1.yaml"
ul_diff "$UL_TMP/e0.yaml" "$UL_TMP/e1.yaml" "export after importing the export"

ul_step "a file with every supported section: a new net, a route, routing, buffers, global, a fault rule"
cat >"$UL_TMP/add.yaml" <<YAML
node:
    transaction_timeout: 7
net:
    - net type: tcp
      local NI(s):
        - nid: $A@tcp
    - net type: tcp1
      local NI(s):
        - nid: $B@tcp1
          tunables:
              peer_credits: 16
peer:
    - primary nid: $G@tcp1
      Multi-Rail: False
      peer ni:
        - nid: $G@tcp1
route:
    - net: tcp2
      gateway: $G@tcp1
      hop: 2
      priority: 3
routing:
    - enable: 1
buffers:
    tiny: 300
    small: 400
    large: 50
global:
    router_sensitivity: 90
fault:
    - kind: drop
      dst: 192.0.2.7@tcp1
      rate: 5
YAML
ul_ctl n1 import "$UL_TMP/add.yaml" || ul_fail "import"
ul_ctl n1 ping "$G@tcp1" --timeout_ms 5000 >/dev/null || ul_fail "the imported NI does not reach g"
ul_ctl n1 net show --json >"$UL_TMP/net.json"
ul_json "$UL_TMP/net.json" "[n['net type'] for n in j['net']] == ['lo', 'tcp', 'tcp1']"
ul_ctl n1 route show -v --json >"$UL_TMP/route.json"
ul_json "$UL_TMP/route.json" "len(j['route']) == 1 and j['route'][0]['net'] == 'tcp2' and j['route'][0]['hop'] == 2 and j['route'][0]['priority'] == 3"
ul_ctl n1 global show --json >"$UL_TMP/g.json"
ul_json "$UL_TMP/g.json" "j['global']['transaction_timeout'] == 7 and j['global']['router_sensitivity'] == 90"
ul_ctl n1 fault show --json >"$UL_TMP/f.json"
ul_json "$UL_TMP/f.json" "len(j['fault']) == 1 and j['fault'][0]['dst'] == '192.0.2.7@tcp1' and j['fault'][0]['rate'] == 5"
export_of "$UL_TMP/e2.yaml"
for want in "nid: $B@tcp1" "peer_credits: 16" "gateway: $G@tcp1" "enable: 1" "tiny: 300" "small: 400" "large: 50" \
	"router_sensitivity: 90" "transaction_timeout: 7" "dst: 192.0.2.7@tcp1" "primary nid: $G@tcp1"; do
	grep -qF "$want" "$UL_TMP/e2.yaml" || ul_fail "export lacks '$want': $(cat "$UL_TMP/e2.yaml")"
done

ul_step "importing the same file again, and the new export, changes nothing"
ul_ctl n1 import "$UL_TMP/add.yaml" || ul_fail "import again"
ul_ctl n1 import "$UL_TMP/e2.yaml" || ul_fail "import of the export"
export_of "$UL_TMP/e3.yaml"
ul_diff "$UL_TMP/e2.yaml" "$UL_TMP/e3.yaml" "export after importing it back"

# refused FILE PATTERN: import fails with one line matching PATTERN, status 2, and export is unchanged
refused()
{
	ul_run "$UL_TMP/r.out" "$UL_TMP/r.err" ul_ctl n1 import "$1"
	[[ $UL_STATUS == 2 ]] || ul_fail "import $(basename "$1"): status $UL_STATUS, want 2: $(cat "$UL_TMP/r.err")"
	ul_one_line "$UL_TMP/r.err" "$2"
	export_of "$UL_TMP/e4.yaml"
	ul_diff "$UL_TMP/e3.yaml" "$UL_TMP/e4.yaml" "export after the refused $(basename "$1")"
}
ul_step "refused, node unchanged: an unsupported section, a changed NID, a fixed option, an unreachable gateway"
printf 'udsp:\n    - src: tcp\n' >"$UL_TMP/udsp.yaml"
refused "$UL_TMP/udsp.yaml" "^ulnetctl: import: .*udsp.yaml:1: unknown key 'udsp' at top level"
printf 'peer:\n    - primary nid: 10.0.0.1@tcp7\n' >"$UL_TMP/peer.yaml"
refused "$UL_TMP/peer.yaml" "^ulnetctl: import: .*peer.yaml:2: peer 10.0.0.1@tcp7 is not on a local net"
printf 'peer:\n    - primary nid: %s\n      Multi-Rail: True\n' "$G@tcp1" >"$UL_TMP/mr.yaml"
refused "$UL_TMP/mr.yaml" "^ulnetctl: import: .*mr.yaml:3: Multi-Rail: True: ulnet has no Multi-Rail"
printf 'net:\n    - net type: tcp\n      local NI(s):\n        - nid: 127.223.0.9@tcp\n' >"$UL_TMP/nid.yaml"
refused "$UL_TMP/nid.yaml" "^ulnetctl: import: .*nid.yaml:4: net tcp runs with NID $A@tcp, not 127.223.0.9@tcp"
printf 'node:\n    page_size: 1048576\n' >"$UL_TMP/page.yaml"
refused "$UL_TMP/page.yaml" "^ulnetctl: import: .*page.yaml: node: page_size 1048576 differs from the running node's"
printf 'buffers:\n    tiny: 9\nroute:\n    - net: tcp9\n      gateway: 10.9.9.9@tcp7\n' >"$UL_TMP/gw.yaml"
refused "$UL_TMP/gw.yaml" "^ulnetctl: import: .*gw.yaml:4: route to tcp9: gateway 10.9.9.9@tcp7 is not on a local net"
ul_step "a change that fails half way is undone, the NIs it added included (a node that routes keeps them)"
ul_ctl n1 set routing 0 || ul_fail "set routing 0"
export_of "$UL_TMP/e3.yaml"
printf 'net:\n    - net type: tcp5\n      local NI(s):\n        - nid: 127.223.5.1@tcp5\n    - net type: tcp6\n      local NI(s):\n        - nid: 192.0.2.66@tcp6\n' >"$UL_TMP/half.yaml"
ul_run "$UL_TMP/r.out" "$UL_TMP/r.err" ul_ctl n1 import "$UL_TMP/half.yaml"
[[ $UL_STATUS != 0 ]] || ul_fail "import of a file whose second NI cannot start: status $UL_STATUS: $(cat "$UL_TMP/r.err")"
ul_one_line "$UL_TMP/r.err" "^ulnetctl: import: .*half.yaml:7: cannot add NI 192.0.2.66@tcp6: "
export_of "$UL_TMP/e5.yaml"
ul_diff "$UL_TMP/e3.yaml" "$UL_TMP/e5.yaml" "export after the half-applied import (tcp5 must be gone)"
ul_run "$UL_TMP/r.out" "$UL_TMP/r.err" ul_ctl n1 import "$UL_TMP/no-such.yaml"
[[ $UL_STATUS == 2 ]] || ul_fail "import of a missing file: status $UL_STATUS"
ul_one_line "$UL_TMP/r.err" "^ulnetctl: import: .*no-such.yaml: No such file or directory"
ul_step "ok"
