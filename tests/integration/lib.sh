# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers for ulnet integration scenarios (tests/integration/test_*.sh). Source it, call
# ul_init, then start nodes from YAML heredocs:
#
#     source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
#     ul_init
#     ul_start_node n1 <<EOF
#     net:
#         - net type: tcp
#           local NI(s):
#             - nid: $(ul_addr 7 1)@tcp
#               interfaces: {0: lo}
#     EOF
#     ul_ctl n1 ping "$(ul_addr 7 1)@tcp" || ul_fail "ping failed"
#
# Environment: BUILD (build dir) and SRC (source dir), passed by tests/integration/meson.build; when
# unset they default to $SRC/build and the repository holding this file. UL_KEEP=1 keeps the temp dir.
# UL_PYTHON picks the python3 for ul_json (default /usr/bin/python3). Scripts may call "$UL_PYTHON",
# "$ULNETD" and "$ULNETCTL" directly; $UL_TMP is the scratch directory.
#
# Functions (all fail the test through ul_fail unless noted):
#   ul_init                  make the temp dir $UL_TMP, find $ULNETD / $ULNETCTL, install the EXIT
#                            trap: it SIGTERMs (then SIGKILLs after 5 s) only the ulnetd processes
#                            this script started, and prints every node's log if the script fails.
#   ul_addr T N              echo 127.T.0.N: give each test its own T (the loopback block), each
#                            node its own N, so nodes keep the real LNet port (988).
#   ul_start_node NAME [ULNETD_ARGS...] < YAML
#                            write stdin to $UL_TMP/NAME/node.yaml, start
#                            `ulnetd -c node.yaml --control $UL_TMP/NAME/ctl.sock ARGS` in the
#                            background (output in $UL_TMP/NAME/ulnetd.log), then ul_wait_ready.
#                            The YAML needs no node: control (--control overrides it).
#   ul_launch_node NAME [ULNETD_ARGS...] < YAML
#                            ul_start_node without the wait: start many nodes at once, then
#                            ul_wait_ready each.
#   ul_wait_ready NAME [SECONDS]
#                            poll `ulnetctl --node SOCK net show` until it succeeds (default 10 s);
#                            fails at the deadline or as soon as ulnetd exits.
#   ul_stop_node NAME [SIGNAL] [SECONDS]
#                            send SIGNAL (default TERM), wait up to SECONDS (default 10) for the exit;
#                            sets UL_STATUS to ulnetd's exit status. Does not judge the status.
#   ul_dir NAME / ul_sock NAME / ul_pid NAME / ul_log NAME
#                            echo the node's directory, control socket, PID, log file.
#   ul_ctl NAME ARGS...      run `ulnetctl --node SOCK ARGS...`; returns its status (no ul_fail).
#   ul_run OUT ERR CMD...    run CMD with stdout in file OUT and stderr in file ERR; sets UL_STATUS;
#                            always returns 0 (for commands that are expected to fail).
#   ul_json FILE PYEXPR      load JSON from FILE as `j` in python3 and fail unless PYEXPR is true:
#                            ul_json out.json 'j["net"][0]["net type"] == "lo"'
#   ul_wait_asleep PID WHAT [SECONDS]
#                            wait until every thread of PID is asleep (state S) at the same look: a
#                            thread that spins never is. Fails after SECONDS (default 20), a bound only
#                            against a hang, naming WHAT and the threads still running.
#   ul_one_line FILE REGEX   fail unless FILE has exactly one line and it matches REGEX (grep -E).
#   ul_diff WANT_FILE GOT_FILE WHAT
#                            fail with a unified diff unless the files are equal.
#   ul_require_root WHY      exit 77 (skip) unless root: WHY says what needs it (tcp nodes listen on
#                            port 988, raw peers bind privileged source ports); call before ul_init.
#   ul_xnode_require         exit 77 (skip) unless $CC_BE and $QEMU_BE (default powerpc64-linux-gnu-gcc,
#                            qemu-ppc64-static) exist; call before ul_init.
#   ul_xnode_build OUT       build tests/cross/xnode.c (a bare node: tcp NI, ping, selftest services)
#                            statically for big-endian ppc64 into OUT; run it with
#                            "$QEMU_BE" -p 65536 OUT NID 65536 for a 64 KiB-page big-endian node.
#   ul_scenarios NET NAME=NID...
#                            source tests/integration/scenarios.sh (the o2ib scenarios the VM lane
#                            runs too) with this runner's driver: nodes by NAME, their NIDs as given,
#                            the console at $BUILD's ulnet-selftest; a case that fails is ul_fail,
#                            one that passes a progress line; a killed node is SIGKILLed and
#                            restarted from its node.yaml.
#   ul_o2ib_node NAME T N PAGE_SIZE TIMEOUT [TUNABLE...]
#                            start an o2ib node on the shm provider at 127.T.0.N@o2ib with the o2ib
#                            timeout TIMEOUT; each TUNABLE ("key: value") is one more of its `lnd
#                            tunables`; UL_BUSY_POLL_US set: the node's busy_poll_us; UL_O2IB_EXTRA
#                            set: more top-level YAML (e.g. a metrics: section).
#   ul_o2ib_pair T TIMEOUT [TUNABLE...]
#                            ul_o2ib_node n1 (4 KiB pages) and n2 (64 KiB pages) on 127.T.0.{1,2}.
#   UL_ATEXIT+=("CMD")      run CMD (eval) at exit after the nodes are stopped: namespaces, links.
#   ul_step MSG / ul_fail MSG
#                            progress line on stderr / "FAIL: MSG" and exit 1 (the trap prints logs).

UL_TMP=
UL_STATUS=0
declare -gA UL_PID=()
declare -ga UL_NODES=()
declare -ga UL_ATEXIT=() # shell commands run at exit, after the nodes are stopped (e.g. ip netns del)

ul_step() { printf '== %s\n' "$*" >&2; }

ul_fail()
{
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

ul_addr() { printf '127.%d.0.%d' "$1" "$2"; }
ul_dir() { printf '%s/%s' "$UL_TMP" "$1"; }
ul_sock() { printf '%s/%s/ctl.sock' "$UL_TMP" "$1"; }
ul_log() { printf '%s/%s/ulnetd.log' "$UL_TMP" "$1"; }
ul_pid() { printf '%s' "${UL_PID[$1]:-}"; }

# true while PID runs (a zombie counts as gone: it is our child and exited).
ul__alive()
{
	local pid=$1 state
	[[ -r /proc/$pid/stat ]] || return 1
	read -r _ _ state _ < "/proc/$pid/stat" 2>/dev/null || return 1
	[[ $state != Z && $state != X ]]
}

ul__now_ms() { date +%s%3N; }

ul__cleanup()
{
	local rc=$? name pid deadline
	trap - EXIT
	set +e # cleanup goes on whatever fails
	for name in "${UL_NODES[@]}"; do
		pid=${UL_PID[$name]:-}
		[[ -n $pid ]] && ul__alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	deadline=$(( $(ul__now_ms) + 5000 ))
	for name in "${UL_NODES[@]}"; do
		pid=${UL_PID[$name]:-}
		[[ -n $pid ]] || continue
		while ul__alive "$pid" && (( $(ul__now_ms) < deadline )); do sleep 0.05; done
		if ul__alive "$pid"; then
			printf 'cleanup: ulnetd %s (pid %s) ignored SIGTERM; killing it\n' "$name" "$pid" >&2
			kill -KILL "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
	done
	if (( rc != 0 )); then
		for name in "${UL_NODES[@]}"; do
			printf -- '---- %s: %s ----\n' "$name" "$(ul_log "$name")" >&2
			cat "$(ul_log "$name")" >&2 2>/dev/null
		done
		printf -- '---- end of logs (temp dir %s) ----\n' "$UL_TMP" >&2
	fi
	for cmd in "${UL_ATEXIT[@]}"; do
		eval "$cmd" >/dev/null 2>&1
	done
	if [[ -n $UL_TMP && ${UL_KEEP:-0} != 1 ]]; then
		rm -rf "$UL_TMP"
	fi
	exit "$rc"
}

ul_init()
{
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	SRC=${SRC:-$(cd "$here/../.." && pwd)}
	BUILD=${BUILD:-$SRC/build}
	ULNETD=$BUILD/tools/ulnetd/ulnetd
	ULNETCTL=$BUILD/tools/ulnetctl/ulnetctl
	[[ -x $ULNETD ]] || ul_fail "no ulnetd at $ULNETD (BUILD=$BUILD)"
	[[ -x $ULNETCTL ]] || ul_fail "no ulnetctl at $ULNETCTL (BUILD=$BUILD)"
	# the system python starts in 40 ms; version-manager shims can take ten times that
	UL_PYTHON=${UL_PYTHON:-$(command -v /usr/bin/python3 || command -v python3)} || ul_fail "no python3"
	# short: a unix socket path holds at most 107 bytes
	UL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ulnet.XXXXXX") || ul_fail "mktemp"
	unset ULNET_NODE
	trap ul__cleanup EXIT
}

ul_ctl()
{
	local name=$1
	shift
	"$ULNETCTL" --node "$(ul_sock "$name")" "$@"
}

ul_run()
{
	local out=$1 err=$2
	shift 2
	UL_STATUS=0
	"$@" >"$out" 2>"$err" || UL_STATUS=$?
	return 0
}

ul_wait_ready()
{
	local name=$1 secs=${2:-10} pid deadline
	pid=${UL_PID[$name]:-}
	[[ -n $pid ]] || ul_fail "ul_wait_ready: no node '$name'"
	deadline=$(( $(ul__now_ms) + secs * 1000 ))
	while :; do
		if ! ul__alive "$pid"; then
			UL_STATUS=0
			wait "$pid" 2>/dev/null || UL_STATUS=$?
			ul_fail "ulnetd $name exited during startup (status $UL_STATUS)"
		fi
		if "$ULNETCTL" --node "$(ul_sock "$name")" net show >/dev/null 2>&1; then
			return 0
		fi
		(( $(ul__now_ms) < deadline )) || ul_fail "ulnetd $name not ready after ${secs}s"
		sleep 0.05
	done
}

ul_launch_node()
{
	local name=$1 dir
	shift
	[[ -z ${UL_PID[$name]:-} ]] || ul_fail "ul_start_node: node '$name' already started"
	dir=$(ul_dir "$name")
	mkdir -p "$dir"
	cat > "$dir/node.yaml"
	"$ULNETD" -c "$dir/node.yaml" --control "$dir/ctl.sock" "$@" >"$dir/ulnetd.log" 2>&1 &
	UL_PID[$name]=$!
	UL_NODES+=("$name")
}

ul_start_node()
{
	ul_launch_node "$@"
	ul_wait_ready "$1"
}

# ul_netns_veth NS1 IF1 ADDR1 NS2 IF2 ADDR2...: namespaces NS1 and NS2 (deleted at exit) joined by the
# veth pair IF1-IF2, with ADDR1 (/24) on IF1 and the ADDR2... on IF2, lo and the pair up. Exit 77
# where namespaces cannot be made.
ul_netns_veth()
{
	local n1=$1 i1=$2 a1=$3 n2=$4 i2=$5 a
	shift 5
	ip netns list >/dev/null 2>&1 || { echo "skip: no network namespaces here"; exit 77; }
	ip netns add "$n1" 2>/dev/null || { echo "skip: cannot create a network namespace here"; exit 77; }
	UL_ATEXIT+=("ip netns del $n1" "ip netns del $n2")
	ip netns add "$n2"
	ip link add "$i1" type veth peer name "$i2"
	ip link set "$i1" netns "$n1"
	ip link set "$i2" netns "$n2"
	ip -n "$n1" addr add "$a1/24" dev "$i1"
	for a in "$@"; do
		ip -n "$n2" addr add "$a/24" dev "$i2"
	done
	for a in "$n1:$i1" "$n2:$i2"; do
		ip -n "${a%%:*}" link set lo up
		ip -n "${a%%:*}" link set "${a##*:}" up
	done
}

# ul_start_in NS NAME: ul_start_node NAME (YAML on stdin) with its ulnetd inside namespace NS.
ul_start_in()
{
	local real=$ULNETD
	printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$1" "$real" >"$UL_TMP/wrap-$2"
	chmod +x "$UL_TMP/wrap-$2"
	ULNETD=$UL_TMP/wrap-$2
	ul_start_node "$2"
	ULNETD=$real
}

ul_stop_node()
{
	local name=$1 sig=${2:-TERM} secs=${3:-10} pid deadline
	pid=${UL_PID[$name]:-}
	[[ -n $pid ]] || ul_fail "ul_stop_node: no node '$name'"
	kill -"$sig" "$pid" 2>/dev/null
	deadline=$(( $(ul__now_ms) + secs * 1000 ))
	while ul__alive "$pid"; do
		if (( $(ul__now_ms) >= deadline )); then
			# where it is stuck, for the log (gdb is optional)
			command -v gdb >/dev/null && gdb -batch -ex "thread apply all bt" -p "$pid" 2>&1 | grep -E '^(Thread|#)' >&2
			ul_fail "ulnetd $name still running ${secs}s after SIG$sig"
		fi
		sleep 0.05
	done
	UL_STATUS=0
	wait "$pid" 2>/dev/null || UL_STATUS=$?
	UL_PID[$name]=
}

ul_json()
{
	"$UL_PYTHON" - "$1" "$2" <<'PY' || ul_fail "JSON check failed: $2 (file $1: $(head -c 400 "$1"))"
import json, sys
with open(sys.argv[1]) as f:
    j = json.load(f)
if not eval(sys.argv[2], {"j": j}):
    sys.exit(1)
PY
}

# ul_stat NAME FIELD: one counter of NAME's `stats show` (send_length, recv_length, ...).
ul_stat()
{
	ul_ctl "$1" stats show --json | "$UL_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["statistics"][sys.argv[1]])' "$2"
}

# ul_wait_stat NAME FIELD MIN [SECS]: wait until NAME's counter FIELD exceeds MIN (traffic is flowing).
ul_wait_stat()
{
	local name=$1 field=$2 min=$3 secs=${4:-10} deadline v
	deadline=$(( $(ul__now_ms) + secs * 1000 ))
	while :; do
		v=$(ul_stat "$name" "$field") || ul_fail "ul_wait_stat: no stats from $name"
		(( v > min )) && return 0
		(( $(ul__now_ms) < deadline )) || ul_fail "$name: $field still $v after ${secs}s (want > $min)"
		sleep 0.05
	done
}

ul_wait_asleep()
{
	local pid=$1 what=$2 secs=${3:-20} deadline busy t st
	deadline=$(( $(ul__now_ms) + secs * 1000 ))
	while :; do
		busy=
		for t in /proc/"$pid"/task/*; do
			# the state is the first field after "(comm)", which may hold spaces
			st=$(sed 's/.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1) || continue
			[[ -z $st || $st == S ]] || busy+=" ${t##*/}:$st($(cat "$t/comm" 2>/dev/null))"
		done
		[[ -z $busy ]] && return 0
		ul__alive "$pid" || ul_fail "$what: process $pid is gone"
		(( $(ul__now_ms) < deadline )) || ul_fail "$what: threads of $pid never all asleep within ${secs}s:$busy"
		sleep 0.05
	done
}

ul_one_line()
{
	local file=$1 re=$2 n
	n=$(wc -l < "$file")
	(( n == 1 )) || ul_fail "expected one line in $file, got $n: $(cat "$file")"
	grep -Eq -- "$re" "$file" || ul_fail "'$(cat "$file")' does not match /$re/"
}

ul_diff()
{
	diff -u "$1" "$2" >&2 || ul_fail "$3 differs from the expected text (diff above: - want, + got)"
}

CC_BE=${CC_BE:-powerpc64-linux-gnu-gcc}
QEMU_BE=${QEMU_BE:-qemu-ppc64-static}

ul_require_root()
{
	if [[ $(id -u) != 0 ]]; then
		echo "SKIP: $*: run as root"
		exit 77
	fi
}

ul_xnode_require()
{
	if ! command -v "$CC_BE" >/dev/null || ! command -v "$QEMU_BE" >/dev/null; then
		echo "skip: $CC_BE or $QEMU_BE not installed"
		exit 77
	fi
}

ul_xnode_build()
{
	ul_step "cross-compile xnode for big-endian ppc64"
	# config.h is the host build's: every LND it registers (o2ib, over the fabric layer) is linked in;
	# the verbs provider is not (no rdma-core for this target), so its switch is dropped
	mkdir -p "$1.inc"
	grep -v ULNET_HAVE_FABRIC_VERBS "$BUILD/src/util/config.h" >"$1.inc/config.h"
	# src/config (the YAML file reader) is left out: no libyaml for this target, and xnode takes no file
	# (the host build's list of built-in LNDs, generated by src/lnd/meson.build, with them)
	local srcs=("$SRC"/src/util/*.c "$SRC"/src/core/*.c "$SRC"/src/lnd/lo/*.c "$SRC"/src/lnd/tcp/*.c
		"$SRC"/src/lnd/o2ib/*.c "$BUILD/src/lnd/lnd_builtin.c" "$SRC"/src/fabric/*.c "$SRC"/src/fabric/shm/*.c
		"$SRC"/src/selftest/*.c)
	"$CC_BE" -std=gnu11 -O2 -static -D_GNU_SOURCE -I"$1.inc" -I"$SRC/include" -I"$SRC/src/util" \
		-I"$SRC/src/core" -I"$SRC/src/core/sdk" -I"$SRC/src/selftest" -I"$SRC/src/fabric" \
		-I"$SRC/src/fabric/shm" "${srcs[@]}" \
		"$SRC/tests/cross/xnode.c" -lpthread -o "$1" ||
		ul_fail "cross build of xnode"
}

ul_o2ib_node()
{
	local name=$1 t=$2 n=$3 ps=$4 timeout=$5 tun extra= nodeopt=
	shift 5
	for tun in "$@"; do
		extra+=$'\n'"              $tun"
	done
	[[ -z ${UL_BUSY_POLL_US:-} ]] || nodeopt=$'\n'"    busy_poll_us: $UL_BUSY_POLL_US"
	ul_start_node "$name" <<YAML
node:
    page_size: $ps$nodeopt${UL_O2IB_EXTRA:+
$UL_O2IB_EXTRA}
net:
    - net type: o2ib
      local NI(s):
        - nid: $(ul_addr "$t" "$n")@o2ib
          lnd tunables:
              provider: shm
              timeout: $timeout$extra
YAML
}

ul_o2ib_pair()
{
	local t=$1 timeout=$2
	shift 2
	ul_o2ib_node n1 "$t" 1 4096 "$timeout" "$@"
	ul_o2ib_node n2 "$t" 2 65536 "$timeout" "$@"
}

# The scenarios' driver (tests/integration/scenarios.sh) for nodes this script started.
declare -gA UL_SC_NID=()
ul_scenarios()
{
	local kv
	SC_NET=$1
	shift
	for kv in "$@"; do
		UL_SC_NID[${kv%%=*}]=${kv#*=}
	done
	SC_TMP=$UL_TMP
	UL_SST=$BUILD/tools/ulnet-selftest/ulnet-selftest
	[[ -x $UL_SST ]] || ul_fail "no ulnet-selftest at $UL_SST"
	sc_ctl() { ul_ctl "$@"; }
	sc_sst()
	{
		local name=$1
		shift
		timeout 60 "$UL_SST" --node "$(ul_sock "$name")" "$@"
	}
	sc_nid() { printf '%s' "${UL_SC_NID[$1]:?no NID for node $1 (ul_scenarios)}"; }
	sc_log() { ul_log "$1"; }
	sc_kill() { ul_stop_node "$1" KILL; }
	# the same configuration again (a new incarnation); the killed one's log is kept beside
	sc_restart()
	{
		local d
		d=$(ul_dir "$1")
		cp "$d/node.yaml" "$d/node.yaml.again"
		mv "$d/ulnetd.log" "$d/ulnetd.log.killed"
		ul_start_node "$1" <"$d/node.yaml.again"
	}
	sc_case()
	{
		[[ $1 == ok ]] || ul_fail "$2: $3"
		ul_step "$2 ok: $3"
	}
	# shellcheck source=tests/integration/scenarios.sh
	source "$SRC/tests/integration/scenarios.sh"
}
