#!/usr/bin/env bash
# Build and run every suite twice: gcc (debugoptimized), then clang with ASan+UBSan.
# Ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0 failed=0

run_build() { # dir, "meson test args", meson setup options...
	local dir=$1 targs=$2; shift 2
	if [ ! -d "$dir" ]; then
		meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
	fi
	if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
		tail -50 "$dir.build.log"
		failed=$((failed + 1))
		return
	fi
	meson test -C "$dir" --print-errorlogs --num-processes 2 $targs 2>&1 | tee "$dir.test.log" | grep -E '^ *[0-9]+/[0-9]+ ' || true
	local ok fail to
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -1)
	fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -1)
	to=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$dir.test.log" | tail -1)
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${fail:-0} + ${to:-0}))
	if [ -z "$ok" ]; then failed=$((failed + 1)); fi
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
	else
		failed=$((failed + 1))
	fi
fi
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
