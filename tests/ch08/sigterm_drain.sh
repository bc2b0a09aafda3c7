#!/usr/bin/env bash
# SIGTERM drains (issue 16): with streams in flight, the server stops taking requests (503 or
# a refused connection), lets every accepted stream finish — each ends with its finish_reason
# and `data: [DONE]` — and exits 0. With a drain deadline too short for them, the streams still
# end explicitly: an error event naming the shutdown, then [DONE]; never a silent cut.
#   sigterm_drain.sh NANOSERVE
set -euo pipefail
bin=$1
source "$(dirname "$0")/serve_test_lib.sh"
out=$(mktemp -d)
trap 'kill -KILL $server_pid 2>/dev/null || true; rm -rf "$out"' EXIT
stream() {  # stream N MAX_TOKENS: a streamed completion into $out/N
  curl -sN --max-time 60 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"tiny\", \"prompt\": \"story $1\", \"max_tokens\": $2, \"temperature\": 0, \"stream\": true}" \
    >"$out/$1" || true
}
wait_first_chunk() { for _ in $(seq 1 200); do grep -q '^data: {' "$out/$1" 2>/dev/null && return; sleep 0.05; done; }

# 1. Drained: three streams of 24 tokens finish after SIGTERM.
start_server "$bin" -m synthetic:tiny --served-model-name tiny --drain-timeout 30
for i in 1 2 3; do stream $i 24 & done
wait_first_chunk 1
kill -TERM "$server_pid"
sleep 0.2
late=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
       -d '{"model": "tiny", "prompt": "late"}' || true)
[[ "$late" == 503 || "$late" == 000 ]] || { echo "FAILED: a request after SIGTERM got $late"; exit 1; }
stop_server 30
wait
[[ "$server_rc" == 0 ]] || { echo "FAILED: exit code $server_rc after SIGTERM"; cat "$server_log"; exit 1; }
for i in 1 2 3; do
  tail -n 2 "$out/$i" | grep -q '^data: \[DONE\]$' || { echo "FAILED: stream $i has no [DONE]"; cat "$out/$i"; exit 1; }
  grep -Eq '"finish_reason":"(length|stop)"' "$out/$i" || { echo "FAILED: stream $i did not finish"; cat "$out/$i"; exit 1; }
done
echo "drained: 3 streams finished after SIGTERM (late request: $late), exit 0"

# 2. Deadline: streams of 200 tokens cannot finish in 0.3 s; they end with an error event.
start_server "$bin" -m synthetic:tiny --served-model-name tiny --drain-timeout 0.3
for i in 4 5; do stream $i 200 & done
wait_first_chunk 4
stop_server 20
wait
[[ "$server_rc" == 0 ]] || { echo "FAILED: exit code $server_rc"; exit 1; }
for i in 4 5; do
  grep -q '^data: {"error":{.*server shutting down' "$out/$i" || { echo "FAILED: stream $i ended without an error event"; cat "$out/$i"; exit 1; }
  tail -n 2 "$out/$i" | grep -q '^data: \[DONE\]$' || { echo "FAILED: stream $i has no [DONE]"; exit 1; }
done
grep -q "drain deadline passed" "$server_log" || { echo "FAILED: the log does not say the deadline passed"; cat "$server_log"; exit 1; }
echo "deadline: 2 unfinished streams ended with an error event naming the shutdown, exit 0"
