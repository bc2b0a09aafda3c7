#!/usr/bin/env bash
# The official openai npm client against a server on a free loopback port (synthetic:tiny with
# SmolLM2's chat template): tests/ch08/openai_client.mjs. Skips (exit 77) when node or
# peers/node_modules/openai is missing (cd peers && npm ci).
#   openai_client.sh NANOSERVE SOURCE_DIR
set -euo pipefail
bin=$1 root=$2
if ! command -v node >/dev/null || [[ ! -d "$root/peers/node_modules/openai" ]]; then
  echo "skip: node or peers/node_modules/openai is not installed (run: cd peers && npm ci)"
  exit 77
fi
source "$root/tests/ch08/serve_test_lib.sh"
trap 'kill -KILL $server_pid 2>/dev/null || true' EXIT
start_server "$bin" -m synthetic:tiny --served-model-name tiny \
  --chat-template "$root/tests/data/chat_templates/smollm2.jinja"
timeout 120 node "$root/tests/ch08/openai_client.mjs" "http://127.0.0.1:$port/v1" tiny
stop_server 20
[[ "$server_rc" == 0 ]] || { echo "FAILED: server exit code $server_rc"; exit 1; }
