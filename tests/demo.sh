#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The quick start's demo: start the bundled demo target (an "order daemon"
# with a held lock, waiting workers, an acceptor, idle threads), take one
# all-thread snapshot of it with stackdump, and stop it again.
set -euo pipefail
build=${1:-build}
demo="$build/tests/fixtures/demo-orderd"
[ -x "$demo" ] || { echo "demo.sh: $demo not built (cmake --build $build)" >&2; exit 2; }
exec 3< <("$demo")
read -r ready pid <&3
trap 'kill "$pid" 2>/dev/null' EXIT
sleep 0.2
"$build/stackdump" -v "$pid"
