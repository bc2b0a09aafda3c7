#!/usr/bin/env bash
# The tutorial's curl examples (chapters/ch08_serving/README.md), run by the test
# ch08.curl_examples against a live server. Usage: curl_examples.sh BASE_URL MODEL
set -euo pipefail
base=${1:-http://127.0.0.1:8000} model=${2:-stories260K}

echo "== models"
curl -s "$base/v1/models"; echo

echo "== completion"
curl -s "$base/v1/completions" -H 'Content-Type: application/json' -d '{
  "model": "'"$model"'", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}'
echo

echo "== streamed completion, stop string, usage"
curl -sN "$base/v1/completions" -H 'Content-Type: application/json' -d '{
  "model": "'"$model"'", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0,
  "stop": ["."], "stream": true, "stream_options": {"include_usage": true}}'

echo "== chat"
curl -s "$base/v1/chat/completions" -H 'Content-Type: application/json' -d '{
  "model": "'"$model"'", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}'
echo

echo "== an error: a field of the wrong type"
curl -s "$base/v1/completions" -H 'Content-Type: application/json' -d '{
  "model": "'"$model"'", "prompt": "x", "max_tokens": "many"}'
echo

echo "== metrics"
curl -s "$base/metrics" | grep -E '^nanoserve:(num_requests_running|generation_tokens_total|time_to_first_token_seconds_count)'
