#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# o2ib over the verbs provider between the VM lane's x86_64 and ppc64le guests (Soft-RoCE, qemu TCG;
# not part of the test suite): 1 MiB brw writes against perftest's ib_write_bw between the same rxe
# devices, the same shape (1 MiB, x86_64 -> ppc64le, 8 in flight, 5 s each), measured back to back in
# 5 rounds; prints each round and the medians' ratio (issue 10's goal: >= 0.9). Runs only the lane's
# bench group (tests/vm/run, tests/vm/cases.sh, docs/vm-lane.md), which needs the verbs provider.
# Usage: bench/vm_o2ib_bench.sh   (VM_DIR as for tests/vm/run)
set -euo pipefail
exec "$(cd "$(dirname "$0")/.." && pwd)/tests/vm/run" --cases bench
