#!/usr/bin/env bash
# Runs the tutorial's curl examples (chapters/ch08_serving/curl_examples.sh) against a server
# and checks each answer. Skips (77) without curl.
#   curl_examples.sh NANOSERVE SOURCE_DIR
set -euo pipefail
bin=$1 root=$2
command -v curl >/dev/null || { echo "skip: no curl"; exit 77; }
source "$root/tests/ch08/serve_test_lib.sh"
trap 'kill -KILL $server_pid 2>/dev/null || true' EXIT
start_server "$bin" -m synthetic:tiny --served-model-name tiny \
  --chat-template "$root/tests/data/chat_templates/smollm2.jinja"
out=$(timeout 60 bash "$root/chapters/ch08_serving/curl_examples.sh" "http://127.0.0.1:$port" tiny)
stop_server 20
echo "$out"
check() { grep -Eq "$1" <<<"$out" || { echo "FAILED: no match for $1"; exit 1; }; }
check '"id":"tiny"'
check '"object":"text_completion".*"usage"'
check '^data: \{.*"finish_reason":"(stop|length)"'
check '^data: \{"choices":\[\],.*"usage"'
check '^data: \[DONE\]$'
check '"object":"chat.completion"'
check '"param":"max_tokens","type":"invalid_request_error"'
check '^nanoserve:generation_tokens_total [1-9]'
[[ "$server_rc" == 0 ]] || { echo "FAILED: server exit code $server_rc"; exit 1; }
echo "curl examples: 8 checks passed"
