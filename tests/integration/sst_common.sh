# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared by test_selftest_*.sh, test_o2ib_selftest_brw.sh and bench/o2ib_bench.sh: ulnetd nodes on tcp
# or o2ib (loopback block 127.T.0.x), with 4 KiB or 64 KiB pages, and the ulnet-selftest console.
# Source after lib.sh.

SST=${BUILD:-$SRC/build}/tools/ulnet-selftest/ulnet-selftest

# sst_init BLOCK: what every selftest script starts with: root (its tcp nodes listen on port 988),
# ul_init, the console built, and tcp usable on 127.BLOCK.0.x (sst_require_tcp).
sst_init()
{
	ul_require_root "its tcp nodes listen on port 988"
	ul_init
	[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"
	sst_require_tcp "$1"
}

# Exit 77 (skipped) when this build has no working tcp LND yet; anything else must start.
sst_require_tcp()
{
	local t=$1 dir="$UL_TMP/probe" pid i
	mkdir -p "$dir"
	printf 'net:\n    - net type: tcp\n      local NI(s):\n        - nid: %s@tcp\n          interfaces: {0: lo}\n' \
		"$(ul_addr "$t" 99)" > "$dir/node.yaml"
	"$ULNETD" -c "$dir/node.yaml" --control "$dir/ctl.sock" >"$dir/log" 2>&1 &
	pid=$!
	for i in $(seq 100); do
		"$ULNETCTL" --node "$dir/ctl.sock" net show >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" 2>/dev/null || true # (its status: under set -e a bare wait would end the script here)
		if grep -Eqi 'not built|not supported|no such lnd|unknown lnd|EPROTONOSUPPORT' "$dir/log"; then
			echo "SKIP: no tcp LND in this build: $(head -c 300 "$dir/log")" >&2
			exit 77
		fi
		ul_fail "probe ulnetd with a tcp NI did not start: $(cat "$dir/log")"
	fi
	kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}

# sst_two_nodes T: n1 = 127.T.0.1 (page 4096), n2 = 127.T.0.2 (page 65536).
sst_two_nodes()
{
	local t=$1 n ps
	for n in 1 2; do
		ps=$(( n == 1 ? 4096 : 65536 ))
		ul_start_node "n$n" <<YAML
node:
    page_size: $ps
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$t" "$n")@tcp
          interfaces: {0: lo}
YAML
	done
	N1=$(ul_addr "$t" 1)@tcp
	N2=$(ul_addr "$t" 2)@tcp
}

# sst_node NAME T N PAGE_SIZE [SELFTEST]: one more tcp node at 127.T.0.N; SELFTEST is the flow mapping
# of its config file's selftest: section, e.g. "{kernel_stats: true}".
sst_node()
{
	local name=$1 t=$2 n=$3 ps=$4 st=${5:-"{}"}
	ul_start_node "$name" <<YAML
node:
    page_size: $ps
selftest: $st
net:
    - net type: tcp
      local NI(s):
        - nid: $(ul_addr "$t" "$n")@tcp
          interfaces: {0: lo}
YAML
}

# sst_run OUT NODE ARGS...: the console against NODE's daemon; stdout in OUT, stderr in OUT.err,
# status in UL_STATUS; never hangs longer than 60 s.
sst_run()
{
	local out=$1 node=$2
	shift 2
	ul_run "$out" "$out.err" timeout 60 "$SST" --node "$(ul_sock "$node")" "$@"
}

# sst_brw_matrix NODE1 NID1 NODE2 NID2 "SIZES" "OFFSETS": brw write and read with check=full, from each
# node to the other, for every size and offset with offset + size <= 1 MiB; every run must report 4
# RPCs, all their bytes and zero errors. Sets SST_BRW_RUNS to the number of runs.
sst_brw_matrix()
{
	local n1=$1 nid1=$2 n2=$3 nid2=$4 sizes=$5 offsets=$6 dir node from to rw size off
	local out=$UL_TMP/brw.json

	SST_BRW_RUNS=0
	for dir in "$n1 $nid1 $nid2" "$n2 $nid2 $nid1"; do
		read -r node from to <<<"$dir"
		for rw in write read; do
			for size in $sizes; do
				for off in $offsets; do
					(( off + size <= 1048576 )) || continue
					ul_run "$out" "$UL_TMP/brw.err" "$SST" --node "$(ul_sock "$node")" --json brw "$rw" \
						--from "$from" --to "$to" --size "$size" --offset "$off" --check full \
						--concurrency 2 --count 4 --timeout 10
					[[ $UL_STATUS == 0 ]] || ul_fail "brw $rw $from->$to size $size off $off: status $UL_STATUS: $(cat "$out" "$UL_TMP/brw.err")"
					ul_json "$out" "j['ok'] and j['rpcs'] == 4 and j['bytes'] == 4 * $size and j['errors'] == {'timeout': 0, 'mismatch': 0, 'refused': 0, 'peer_gone': 0}"
					SST_BRW_RUNS=$((SST_BRW_RUNS + 1))
				done
			done
		done
	done
}

# sst_py_peer SCRIPT ADDR STATE [ARGS...]: a Python wire peer of tests/integration (kernel_sst_server.py,
# kernel_sst_client.py) on ADDR:988, its counts in STATE (JSON), killed at exit; returns once it
# wrote STATE (it listens then).
sst_py_peer()
{
	local script=$1 addr=$2 state=$3 pid
	shift 3
	"$UL_PYTHON" "$SRC/tests/integration/$script" "$addr" "$state" "$@" 2>"$state.err" &
	pid=$!
	UL_ATEXIT+=("kill $pid")
	for _ in $(seq 200); do
		[[ -s $state ]] && return 0
		kill -0 "$pid" 2>/dev/null || ul_fail "$script at $addr did not start: $(cat "$state.err")"
		sleep 0.05
	done
	ul_fail "$script at $addr did not start"
}
