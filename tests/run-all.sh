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
# ThreadSanitizer on the in-process suites (loop threads against API callers, tcp between two nodes)
TSAN_OPTIONS=halt_on_error=1 CC=clang run_build build-tsan "--suite unit --suite lnd" -Dbuildtype=debug -Db_sanitize=thread -Db_lundef=false
# The fuzz targets, fixed seed and run count (not timed)
CC=clang run_build build-fuzz "--suite fuzz" -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized -Db_lundef=false
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
