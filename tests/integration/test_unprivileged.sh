#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetd without root (docs/tools.md "Running without root"), on 127.222.0.x:
#  1. as nobody with no capability: it listens on a port above 1023 (lnd tunable accept_port) and,
#     refused privileged source ports, connects from ephemeral ones (ss shows them); a root peer on
#     the same port with accept=all pings it and is pinged by it;
#  2. a peer with the default accept=secure refuses that node's connections, with one line naming
#     the source port and the knob, and the ping fails with an error, not a hang;
#  3. as nobody with CAP_NET_BIND_SERVICE alone (ambient): it listens on 988 and connects from
#     privileged ports, so a default (accept=secure) peer accepts it both ways.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_require_root "it drops to nobody with setpriv"
ul_init
command -v setpriv >/dev/null || { echo "skip: no setpriv (util-linux)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "skip: no user nobody"; exit 77; }
NOGROUP=$(id -gn nobody)
U=$(ul_addr 222 1) R=$(ul_addr 222 2) S=$(ul_addr 222 3) U2=$(ul_addr 222 4) R2=$(ul_addr 222 5)
chmod 755 "$UL_TMP"

# start_as NAME CAPS: ul_start_node NAME (YAML on stdin) with ulnetd run as nobody, with the ambient
# capabilities CAPS ("" for none); its directory is nobody's, for its control socket
start_as()
{
	local real=$ULNETD dir
	dir=$(ul_dir "$1")
	mkdir -p "$dir"
	chown nobody "$dir"
	if [[ -n $2 ]]; then
		printf '#!/bin/sh\nexec setpriv --reuid=nobody --regid=%s --clear-groups --inh-caps=%s --ambient-caps=%s %s "$@"\n' \
			"$NOGROUP" "$2" "$2" "$real" >"$UL_TMP/wrap-$1"
	else
		printf '#!/bin/sh\nexec setpriv --reuid=nobody --regid=%s --clear-groups %s "$@"\n' "$NOGROUP" "$real" >"$UL_TMP/wrap-$1"
	fi
	chmod +x "$UL_TMP/wrap-$1"
	ULNETD=$UL_TMP/wrap-$1
	ul_start_node "$1"
	ULNETD=$real
}

# node_yaml ADDR [LND TUNABLES...]: a one-NI tcp node
node_yaml()
{
	local addr=$1
	shift
	printf 'net:\n    - net type: tcp\n      local NI(s):\n        - nid: %s@tcp\n' "$addr"
	if (($#)); then
		printf '          lnd tunables:\n'
		printf '              %s\n' "$@"
	fi
}

# caps_of NAME: the effective capability mask and real uid of a node's ulnetd
caps_of() { awk '/^CapEff:/ { c = $2 } /^Uid:/ { u = $2 } END { print c, u }' "/proc/$(ul_pid "$1")/status"; }

ul_step "1. as nobody, no capability, accept_port 1988: ping a root peer with accept=all, both ways"
start_as u "" < <(node_yaml "$U" "accept_port: 1988")
read -r caps uid <<<"$(caps_of u)"
[[ $caps == 0000000000000000 && $uid == "$(id -u nobody)" ]] || ul_fail "node u runs with caps $caps as uid $uid"
ul_start_node r < <(node_yaml "$R" "accept_port: 1988" "accept: all")
ul_ctl u ping "$R@tcp" --count 2 --timeout_ms 5000 >/dev/null || ul_fail "ping from the unprivileged node failed"
ul_ctl r ping "$U@tcp" --count 2 --timeout_ms 5000 >/dev/null || ul_fail "ping to the unprivileged node failed"
# the connections node u opened (to r's port 1988) come from ports above 1023 (ss, not ulnet, says so)
ports=$(ss -Htn state established src "$U" dst "$R:1988" | awk '{ n = split($3, a, ":"); print a[n] }')
[[ -n $ports ]] || ul_fail "no connection from $U to $R:1988: $(ss -tn)"
for p in $ports; do ((p > 1023)) || ul_fail "node u connected from privileged port $p without the capability"; done
ul_ctl u net show -v --json >"$UL_TMP/u.json"
ul_json "$UL_TMP/u.json" "j['net'][-1]['local NI(s)'][0]['lnd tunables']['accept_port'] == 1988"

ul_step "2. a peer with accept=secure refuses it, naming the port and the knob; the ping ends in an error"
ul_start_node s < <(node_yaml "$S" "accept_port: 1988")
ul_run "$UL_TMP/p.out" "$UL_TMP/p.err" timeout 30 "$ULNETCTL" --node "$(ul_sock u)" ping "$S@tcp" --count 1 --timeout_ms 3000
[[ $UL_STATUS != 0 && $UL_STATUS != 124 ]] || ul_fail "ping to an accept=secure peer: status $UL_STATUS (want an error)"
grep -Eq "refusing $U:[0-9]+: source port [0-9]+ > 1023 \\(lnd tunable accept=secure\\)" "$(ul_log s)" ||
	ul_fail "node s did not name the refusal: $(cat "$(ul_log s)")"

ul_step "3. as nobody with CAP_NET_BIND_SERVICE alone: port 988 and privileged source ports; accept=secure peers take it"
start_as u2 "+net_bind_service" < <(node_yaml "$U2")
read -r caps uid <<<"$(caps_of u2)"
[[ $caps == 0000000000000400 && $uid == "$(id -u nobody)" ]] || ul_fail "node u2 runs with caps $caps as uid $uid"
ul_start_node r2 < <(node_yaml "$R2")
ul_ctl u2 ping "$R2@tcp" --count 2 --timeout_ms 5000 >/dev/null || ul_fail "ping from the CAP_NET_BIND_SERVICE node failed"
ul_ctl r2 ping "$U2@tcp" --count 2 --timeout_ms 5000 >/dev/null || ul_fail "ping to the CAP_NET_BIND_SERVICE node failed"
ports=$(ss -Htn state established src "$U2" dst "$R2:988" | awk '{ n = split($3, a, ":"); print a[n] }')
[[ -n $ports ]] || ul_fail "no connection from $U2 to $R2:988: $(ss -tn)"
for p in $ports; do ((p <= 1023)) || ul_fail "node u2 connected from port $p despite CAP_NET_BIND_SERVICE"; done
if grep -q "refusing" "$(ul_log r2)"; then ul_fail "node r2 refused node u2: $(cat "$(ul_log r2)")"; fi
ul_step "ok"
