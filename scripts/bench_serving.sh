#!/usr/bin/env bash
# Chapter 8's load test from one command: apps/bench_serving against the engine in-process, one
# `nanoserve serve` replica, and N replicas behind nginx (scripts/serve_cluster.sh), on the same
# workload at each request rate; then the server's cost per streamed token at 64 concurrent
# streams (one replica with its /metrics, and the engine alone on the same requests); then
# the plots and tables (scripts/plot_results.py -> docs/images/ch08_*.png, docs/results/ch08_*).
#
#   scripts/bench_serving.sh [--model stories260K.bin] [--rates 0.1,0.2,0.4,0.8,inf] [-n 12]
#                            [--prompt-len fixed:32] [--output-len fixed:16] [--replicas 2]
#                            [--concurrency 64] [--out docs/results] [--images docs/images]
#                            [--build build/sim]
#
# Everything listens on loopback. On the CUDA simulator every timing is CPU time of the
# simulator (the report and the plots say so), not GPU performance.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=stories260K.bin rates=0.1,0.2,0.4,0.8,inf n=12 prompt_len=fixed:32 output_len=fixed:16
replicas=2 concurrency=64 out="$root/docs/results" images="$root/docs/images" build="$root/build/sim"
while (($#)); do
  case $1 in
    --model|-m) model=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --prompt-len) prompt_len=$2; shift 2 ;;
    --output-len) output_len=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench_serving.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
nanoserve="$build/apps/nanoserve/nanoserve" bench="$build/apps/bench_serving/bench_serving"
for b in "$nanoserve" "$bench"; do
  [[ -x $b ]] || { echo "bench_serving.sh: no $b (cmake --build --preset sim --target nanoserve bench_serving)" >&2; exit 2; }
done
if [[ -z ${NANOSERVE_DATA:-} && -d $root/../shared/data ]]; then export NANOSERVE_DATA=$(cd "$root/../shared/data" && pwd); fi
work=$(mktemp -d)
server_pid="" cluster_pid=""
cleanup() {
  for p in $server_pid $cluster_pid; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
workload=(-m "$model" --prompt-len "$prompt_len" --output-len "$output_len" --ignore-eos
          --goodput ttft:4000 tpot:500 --max-duration 300)
sweep=("${workload[@]}" --request-rate "$rates" -n "$n")
# The overhead run: `concurrency` streams at all times (2 x concurrency requests, all at once).
overhead=("${workload[@]}" --request-rate inf -n $((2 * concurrency)) --max-concurrency "$concurrency")
wait_port() {  # wait_port FILE PID
  for _ in $(seq 1 600); do
    [[ -s $1 ]] && return 0
    kill -0 "$2" 2>/dev/null || { echo "bench_serving.sh: the server died" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench_serving.sh: no server after 60 s" >&2; exit 1
}
step() { echo; echo "== $*"; }

step "the engine alone (in-process), rates $rates"
"$bench" --backend engine "${sweep[@]}" --label "engine alone" --json "$work/engine.json"

step "one replica over HTTP, rates $rates"
"$nanoserve" serve -m "$model" --port 0 --port-file "$work/port" 2>"$work/server.log" &
server_pid=$!
wait_port "$work/port" "$server_pid"
url="http://127.0.0.1:$(cat "$work/port")"
"$bench" --base-url "$url" "${sweep[@]}" --server-metrics --label "1 replica" --json "$work/one.json"

step "the server's cost per streamed token: $concurrency concurrent streams, one replica"
"$bench" --base-url "$url" "${overhead[@]}" --server-metrics --label "1 replica" --json "$work/overhead_http.json"
kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=""
step "the same $concurrency streams on the engine alone"
"$bench" --backend engine "${overhead[@]}" --label "engine alone" --json "$work/overhead_engine.json"

step "$replicas replicas behind nginx, rates $rates"
bash "$root/scripts/serve_cluster.sh" -n "$replicas" -p 0 --bin "$nanoserve" --port-file "$work/cport" \
  -- -m "$model" 2>"$work/cluster.log" &
cluster_pid=$!
wait_port "$work/cport" "$cluster_pid"
"$bench" --base-url "http://127.0.0.1:$(cat "$work/cport")" "${sweep[@]}" \
  --label "nginx + $replicas replicas" --json "$work/cluster.json"
kill -TERM "$cluster_pid"; wait "$cluster_pid" || true; cluster_pid=""

# One report for the plotter: every record keeps its setup's label; the overhead runs are
# the table "overhead".
mkdir -p "$out" "$images"
backend=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["backend"])' "$work/one.json")
python3 - "$work" "$out/ch08_${backend}.json" <<'PY'
import json, os, sys
work, dest = sys.argv[1], sys.argv[2]
report = json.load(open(os.path.join(work, "one.json")))
report["records"] = []
for name, table in (("engine", "load"), ("one", "load"), ("cluster", "load"),
                    ("overhead_http", "overhead"), ("overhead_engine", "overhead")):
    part = json.load(open(os.path.join(work, name + ".json")))
    for r in part["records"]:
        r["table"] = table
        r["workload"] = part["workload"]
        report["records"].append(r)
report["label"] = "engine alone, 1 replica, nginx + replicas"
json.dump(report, open(dest, "w"), indent=2)
print("wrote", dest)
PY
py=python3  # the one with matplotlib (Debian's python3-matplotlib; a pyenv python may lack it)
python3 -c 'import matplotlib' 2>/dev/null || py=/usr/bin/python3
"$py" "$root/scripts/plot_results.py" "$out/ch08_${backend}.json" --out "$images" --tables "$out"
