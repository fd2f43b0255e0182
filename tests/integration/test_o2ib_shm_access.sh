#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Who may reach a root ulnetd's o2ib NI on the shm provider (docs/fabric.md, Trust model), as an
# unprivileged local user would try: a raw client (tests/integration/shm_cm_client.py) run as uid
# 1001 connects to the NI's abstract CM socket and is answered with a bare REJECT (-EACCES) before
# the node reads anything; the node logs one line naming the uid and the tunables. With lnd tunable
# `device: {allow_uid: 1001}` (YAML, shown back by net show -v) the same client is let in (the node
# waits for its CONNREQ). Two root nodes still ping each other. 127.187.0.{1,2}.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP
EVIL=1001
[[ $(id -u) == 0 ]] || { echo "needs root (it plays uid $EVIL against a root node)" >&2; exit 77; }
command -v setpriv >/dev/null || ul_fail "setpriv (util-linux) missing"
CLIENT=$T/shm_cm_client.py
cp "$SRC/tests/integration/shm_cm_client.py" "$CLIENT"
chmod 755 "$T" "$CLIENT"

start()
{
	local n=$1 extra=$2
	ul_start_node "n$n" <<YAML
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr 187 "$n")@o2ib
          lnd tunables:
              provider: shm
              timeout: 10
              ${extra}
YAML
}

as_evil() { setpriv --reuid="$EVIL" --regid="$EVIL" --clear-groups "$UL_PYTHON" "$CLIENT" "$@"; }

ul_step "a root node refuses an unprivileged client before reading a byte"
start 1 ""
start 2 ""
out=$(as_evil "$(ul_addr 187 1)" 987) || ul_fail "client: $out"
[[ $out == "rejected -13" ]] || ul_fail "uid $EVIL was not refused with -EACCES: '$out'"
grep -q "runs as uid $EVIL gid $EVIL; this node (uid 0) lets in its own uid only (lnd tunables device.allow_uid: -1, device.allow_gid: -1): refused" \
	"$(ul_log n1)" || ul_fail "no refusal line naming the uid and the tunables: $(tail -3 "$(ul_log n1)")"

ul_step "root nodes still ping each other"
ul_ctl n2 ping "$(ul_addr 187 1)@o2ib" --count 2 --timeout_ms 5000 >"$T/ping.out" 2>&1 ||
	ul_fail "ping: $(cat "$T/ping.out")"

ul_step "device.allow_uid lets that uid in (and net show -v shows it)"
ul_stop_node n1
start 1 "device: {allow_uid: $EVIL}"
ul_ctl n1 net show -v --json >"$T/net.json"
ul_json "$T/net.json" "str(j['net'][1]['local NI(s)'][0]['lnd tunables']['device.allow_uid']) == '$EVIL'"
out=$(as_evil "$(ul_addr 187 1)" 987) || ul_fail "client: $out"
[[ $out == "waiting" ]] || ul_fail "uid $EVIL allowed but not let in: '$out'"
echo "shm access: refused as uid $EVIL by default, let in with device.allow_uid: $EVIL" >&2
