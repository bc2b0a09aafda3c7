#!/usr/bin/env bash
# serve_tp.sh NANOSERVE SOURCE_DIR LAUNCHER...: `nanoserve serve -m synthetic:tiny` split across
# 2 ranks (LAUNCHER: mpirun, its flags and -np 2) answers greedy, sampled (n = 3) and
# prefix-sharing completions with the texts the one-device server gives, and drains and exits 0
# when rank 0 gets SIGTERM (mpirun itself would end every rank at once). Skips (77) without curl.
set -euo pipefail
bin=$1 root=$2
shift 2
command -v curl >/dev/null || { echo "skip: no curl"; exit 77; }
source "$root/tests/ch08/serve_test_lib.sh"
# mpirun ends its ranks on SIGTERM (a SIGKILL would leave them running)
trap 'kill -TERM $server_pid 2>/dev/null && sleep 2; kill -KILL $server_pid 2>/dev/null || true' EXIT
request() {
  curl -sS --max-time 60 "http://127.0.0.1:$port/v1/completions" \
    -H 'Content-Type: application/json' -d "$1" | grep -o '"text":"[^"]*"' | tr '\n' ' '
}
# Greedy; then 3 samples of one prompt (forked blocks) and a prompt that extends it (prefix
# cache hits, 4-token blocks): the plans rank 0 broadcasts carry block copies and shared blocks.
complete() {
  request '{"model": "tiny", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}'
  request '{"model": "tiny", "prompt": "Once upon a time there was", "max_tokens": 12,
            "temperature": 0.8, "n": 3, "seed": 7}'
  request '{"model": "tiny", "prompt": "Once upon a time there was a dog", "max_tokens": 12,
            "temperature": 0}'
}
start_server "$bin" -m synthetic:tiny --served-model-name tiny --block-size 4
want=$(complete)
stop_server 20

launcher=("$@")
start_server "$bin" -m synthetic:tiny --served-model-name tiny --block-size 4 --tensor-parallel 2
got=$(complete)
# Rank 0: the child of mpirun whose environment says so.
for pid in $(pgrep -P "$server_pid"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then
    signal_pid=$pid
  fi
done
[[ -n "${signal_pid:-}" ]] || { echo "FAILED: rank 0 not found"; cat "$server_log"; exit 1; }
stop_server 30
cat "$server_log"
echo "one device:        $want"
echo "tensor-parallel 2: $got"
[[ -n "$want" && "$got" == "$want" ]] || { echo "FAILED: the completions differ"; exit 1; }
grep -q "tensor-parallel 2 over Open MPI" "$server_log" || { echo "FAILED: not split"; exit 1; }
[[ "$server_rc" == 0 ]] || { echo "FAILED: the run exited $server_rc"; exit 1; }
echo "ok: the same completions at TP 2, drained on SIGTERM to rank 0"
