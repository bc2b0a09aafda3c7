#!/usr/bin/env bash
# The live view's browser test (one Chromium launch). Skips (77) without node, playwright-core
# (cd peers && npm ci) or Debian's chromium (scripts/bootstrap.sh installs it).
#   live_view_browser.sh NANOSERVE SOURCE_DIR [SCREENSHOT.png]
set -euo pipefail
bin=$1 root=$2 shot=${3:-}
if ! command -v node >/dev/null || [[ ! -d "$root/peers/node_modules/playwright-core" ]]; then
  echo "skip: node or peers/node_modules/playwright-core is not installed (cd peers && npm ci)"
  exit 77
fi
[[ -x "${CHROMIUM:-/usr/bin/chromium}" ]] || { echo "skip: no chromium (apt-get install chromium)"; exit 77; }
source "$root/tests/ch08/serve_test_lib.sh"
trap 'kill -KILL $server_pid 2>/dev/null || true' EXIT
start_server "$bin" -m synthetic:tiny --served-model-name tiny --num-kv-blocks 256 --block-size 4
timeout 120 node "$root/tests/ch08/live_view_browser.mjs" "http://127.0.0.1:$port" $shot
stop_server 20
[[ "$server_rc" == 0 ]] || { echo "FAILED: server exit code $server_rc"; exit 1; }
