#!/usr/bin/env bash
# Main job: build everything and run the demo (see README).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
[ -d build ] || meson setup build -Dbuildtype=release >/dev/null
ninja -C build >/dev/null
exec bash scripts/demo-run.sh build
