#!/usr/bin/env bash
# bench_serving runs end to end (seconds): 4 requests of 4 tokens (ignore_eos) against a server
# on a free loopback port with its /metrics read around the run, then the same workload on the
# engine in-process. The JSON must account for every request and token: 4 completed, 16 output
# tokens (the client's count, and the server's own), a TTFT and an e2e latency per request.
#   bench_serving_smoke.sh NANOSERVE BENCH_SERVING
set -euo pipefail
bin=$1 bench=$2
source "$(dirname "$0")/serve_test_lib.sh"
out=$(mktemp -d)
trap 'kill -KILL $server_pid 2>/dev/null || true; rm -rf "$out"' EXIT
workload=(-m synthetic:tiny -n 4 --request-rate inf --prompt-len fixed:6 --output-len fixed:4 --ignore-eos
          --goodput ttft:60000 --max-duration 60)
start_server "$bin" -m synthetic:tiny --served-model-name tiny
# The server queues up to 1024 connections for its accept thread (cpp-httplib's own 5 dropped
# handshakes when 64 clients reconnected at once): `ss` shows a listening socket's backlog.
if command -v ss >/dev/null; then
  backlog=$(ss -ltnH "sport = :$port" | awk '{print $3}')
  [[ $backlog -ge 1024 ]] || { echo "FAILED: listen backlog $backlog, expected >= 1024"; exit 1; }
fi
"$bench" --base-url "http://127.0.0.1:$port" "${workload[@]}" --server-metrics --json "$out/http.json"
stop_server 20
"$bench" --backend engine "${workload[@]}" --json "$out/engine.json"
python3 - "$out/http.json" "$out/engine.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    report = json.load(open(path))
    assert report["program"] == "bench_serving" and report["device"], report
    (row,) = report["records"]
    who = row["client_backend"]
    assert (row["sent"], row["completed"], row["failed"]) == (4, 4, 0), (who, row)
    assert (row["input_tokens"], row["output_tokens"]) == (24, 16), (who, row)
    assert row["ttft_ms"]["count"] == 4 and row["e2el_ms"]["count"] == 4, (who, row)
    assert 0 < row["ttft_ms"]["p50"] <= row["e2el_ms"]["p50"], (who, row)
    assert row["goodput"] == row["request_throughput"] > 0, (who, row)
    # The engine's own account: every token, at least one step per token of a request.
    o = row["server_overhead"] if who == "http" else row["engine"]
    assert o["generated_tokens"] == 16 and o["steps"] >= 4, o
    assert o["step_ms"] > 0 and o["engine_thread_cpu_ms_per_step"] > 0, o
    if who == "http":
        assert o["server_us_per_token"]["total"] > 0, o
    print(f"{who}: 4/4 requests, 16 tokens, TTFT p50 {row['ttft_ms']['p50']:.0f} ms")
PY
