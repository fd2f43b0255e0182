# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers shared by the bench/*.sh scripts (not tests). Source it after tests/integration/lib.sh's
# ul_init (the node helpers use ul_*, $UL_PYTHON and $UL_TMP); median and ucx_install need neither.
#   median V...              the median of the numbers V (the lower middle one of an even count)
#   mbps JSON                ulnet-selftest --json result file: its MBps (10^6 bytes/s)
#   nodes_cpu_ns [NAME...]   CPU time (ns) the ulnetd NAMEs (default n1 n2) have used so far, every
#                            thread (schedstat: time on a CPU)
#   brw_cpu NS_BEFORE JSON [NAME...]
#                            CPU ms per GiB a brw moved (JSON's bytes), both NAMEs' (default n1 n2)
#                            CPU since NS_BEFORE (nodes_cpu_ns)
#   start_nodes BUSY_POLL_US [FIRST]
#                            two tcp ulnetd, n$FIRST and n$((FIRST + 1)) (FIRST default 1), on
#                            127.$T.0.FIRST and the next address, node busy_poll_us BUSY_POLL_US; a
#                            warm-up ping from the first to the second
#   stop_nodes [FIRST]       stop them
#   sst_ping_us NAME FROM TO selftest ping RPC round trip, one in flight, $SECS seconds, from NID FROM
#                            to NID TO driven through node NAME's console: the median latency (us);
#                            the whole result stays in $UL_TMP/sst_ping.json
#   ucx_install              install Debian's ucx-utils (ucx_perftest) unless it is there
SST=${SST:-$BUILD/tools/ulnet-selftest/ulnet-selftest}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

mbps() { "$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["MBps"])' "$1"; }

nodes_cpu_ns()
{
	local t=0 a f n names=("$@")
	((${#names[@]})) || names=(n1 n2)
	for n in "${names[@]}"; do
		for f in /proc/"$(ul_pid "$n")"/task/*/schedstat; do
			read -r a _ <"$f" && t=$((t + a))
		done
	done
	echo "$t"
}

brw_cpu()
{
	local c0=$1 json=$2
	shift 2
	"$UL_PYTHON" -c 'import json,sys; print((int(sys.argv[3]) - int(sys.argv[1])) / 1e6 / (json.load(open(sys.argv[2]))["bytes"] / 2**30))' \
		"$c0" "$json" "$(nodes_cpu_ns "$@")"
}

start_nodes()
{
	local busy=$1 first=${2:-1} n
	for n in "$first" $((first + 1)); do
		ul_start_node "n$n" <<YAML
node:
    busy_poll_us: $busy
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$T" "$n")@tcp
YAML
	done
	ul_ctl "n$first" ping "$(ul_addr "$T" $((first + 1)))@tcp" --count 10 --timeout_ms 5000 >/dev/null ||
		ul_fail "warm-up ping failed"
}

stop_nodes()
{
	local first=${1:-1}
	ul_stop_node "n$first"
	ul_stop_node "n$((first + 1))"
}

sst_ping_us()
{
	"$SST" --node "$(ul_sock "$1")" --json ping --from "$2" --to "$3" --concurrency 1 --duration "$SECS" \
		>"$UL_TMP/sst_ping.json" || ul_fail "selftest ping failed"
	"$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_us"]["p50"])' "$UL_TMP/sst_ping.json"
}

ucx_install()
{
	command -v ucx_perftest >/dev/null && return 0
	local log
	log=$(mktemp)
	echo "installing ucx-utils (ucx_perftest) ..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q ucx-utils >"$log" 2>&1 ||
		{ cat "$log" >&2; rm -f "$log"; echo "cannot install ucx-utils" >&2; exit 1; }
	rm -f "$log"
}
