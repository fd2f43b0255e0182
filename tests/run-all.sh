#!/usr/bin/env bash
# Build and run every suite in four builds: gcc (debugoptimized) with every suite; clang with
# ASan+UBSan with every suite; clang with TSan with the unit, lnd and integration suites; clang with
# the libFuzzer targets (fixed seed and run count). Then the package lane (tests/pkg/run.sh: the Debian
# packages built, installed, run, purged; ULNET_PKG_LANE=0 leaves it out) and the VM lane
# (tests/vm/run: an x86_64 and a ppc64le VM under qemu); ULNET_VM_LANE=0 leaves it out for quick local
# runs.
# An existing build directory is reconfigured with the options given here, so a change to them
# applies. The counts come from each build's meson-logs/testlog.json (skipped tests count as neither);
# a failing test's output is printed here, not only left in that build's log files.
# Ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0 failed=0
PYTHON=${PYTHON:-python3}

# count_results DIR: the failing tests' output on stdout, then one line "PASSED FAILED SKIPPED" from
# DIR/meson-logs/testlog.json. OK and EXPECTEDFAIL pass; SKIP is neither; FAIL, TIMEOUT,
# UNEXPECTEDPASS, ERROR (and anything else) fail.
count_results()
{
	"$PYTHON" - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
MAX_LINES = 2000  # of one failing test's output: integration scripts print every node's log
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    t = json.loads(line)
    r = t.get("result")
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
        continue
    if r == "SKIP":
        skipped += 1
        continue
    failed += 1
    out = "".join(t.get(k) or "" for k in ("stdout", "stderr")).splitlines()
    print(f"---- {t.get('name')}: {r} (exit status {t.get('returncode')}), {len(out)} lines of output ----")
    if len(out) > MAX_LINES:
        print(f"[first {len(out) - MAX_LINES} lines left out: see {sys.argv[1]}]")
    print("\n".join(out[-MAX_LINES:]))
    print(f"---- end of {t.get('name')} ----")
print(passed, failed, skipped)
PY
}

run_build() { # dir, "meson test args", meson setup options...
	local dir=$1 targs=$2; shift 2
	local setup=(meson setup)
	# a build directory made before is reconfigured with these options (meson keeps the old ones
	# otherwise); one without meson's state is set up afresh
	[ -f "$dir/meson-private/coredata.dat" ] && setup+=(--reconfigure)
	"${setup[@]}" "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
	if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
		tail -50 "$dir.build.log"
		failed=$((failed + 1))
		return
	fi
	rm -f "$dir/meson-logs/testlog.json"
	# shellcheck disable=SC2086 # targs holds several arguments
	meson test -C "$dir" --num-processes 2 $targs 2>&1 | tee "$dir.test.log" | grep --line-buffered -E '^ *[0-9]+/[0-9]+ '
	local counts p f s
	if [ ! -s "$dir/meson-logs/testlog.json" ] || ! counts=$(count_results "$dir"); then
		echo "$dir: meson test left no results: $(tail -20 "$dir.test.log")"
		failed=$((failed + 1))
		return
	fi
	# everything but the last line is the failing tests' output
	sed '$d' <<<"$counts"
	read -r p f s <<<"$(tail -1 <<<"$counts")"
	echo "$dir: $p passed, $f failed, $s skipped"
	passed=$((passed + p))
	failed=$((failed + f))
}

run_build build-gcc "" -Dbuildtype=debugoptimized
CC=clang run_build build-asan "" -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
# ThreadSanitizer on the unit, lnd and integration suites (loop threads against API callers, tcp
# between nodes, ulnetd built with TSan), every node with 2 loop threads (ULNET_LOOPS: the default of
# node option loops): conns on both loops, ticks and handlers on loop 0, socket I/O without the node
# lock. About 5 minutes on the 2-core CI machine.
ULNET_LOOPS=2 TSAN_OPTIONS=halt_on_error=1 CC=clang run_build build-tsan "--suite unit --suite lnd --suite integration" -Dbuildtype=debug -Db_sanitize=thread -Db_lundef=false
# The fuzz targets, fixed seed and run count (not timed)
CC=clang run_build build-fuzz "--suite fuzz" -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized -Db_lundef=false
# The package lane (tests/pkg/run.sh, docs/packaging.md): dpkg-buildpackage, lintian, apt-get install,
# two installed nodes (127.225.x) under the unit's restrictions, completion, systemd-analyze verify,
# the man pages; each step counts here. It purges the packages when it ends (an installed libulnet
# must not serve a later lane). About 3 minutes. ULNET_PKG_LANE=0 leaves it out; its exit 77 is a
# skip (not root, tools missing), any other failure without a count line counts as one failure.
if [ "${ULNET_PKG_LANE:-1}" != 0 ]; then
	pkg_rc=0
	bash tests/pkg/run.sh >build-pkg.log 2>&1 || pkg_rc=$?
	grep -E '^pkg: (ok|FAIL)|^    |^pkg lane' build-pkg.log || tail -30 build-pkg.log
	pkg_counts=$(tail -1 build-pkg.log)
	if [[ $pkg_counts =~ ^pkg\ lane:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
		if [ "$pkg_rc" -ne 0 ] && [ "$pkg_rc" -ne 77 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then
			failed=$((failed + 1))
		fi
	elif [ "$pkg_rc" -ne 77 ]; then
		failed=$((failed + 1))
	fi
fi
# The VM lane (tests/vm/run, docs/vm-lane.md): an x86_64 and a ppc64le VM under qemu; each of its
# cases counts here. ULNET_VM_LANE=0 leaves it out (quick local runs); its exit 77 is a skip (qemu
# cannot start at all), any other failure without a count line counts as one failure.
if [ "${ULNET_VM_LANE:-1}" != 0 ]; then
	mkdir -p build-vm
	vm_rc=0
	nice -n 10 bash tests/vm/run >build-vm/lane.log 2>&1 || vm_rc=$?
	grep -E '^vm lane' build-vm/lane.log || tail -30 build-vm/lane.log
	vm_counts=$(tail -1 build-vm/lane.log)
	if [[ $vm_counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
		if [ "$vm_rc" -ne 0 ] && [ "$vm_rc" -ne 77 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then
			failed=$((failed + 1))
		fi
	elif [ "$vm_rc" -ne 77 ]; then
		failed=$((failed + 1))
	fi
fi
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
