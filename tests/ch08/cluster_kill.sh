#!/usr/bin/env bash
# The cluster survives a replica's death (issue 16): scripts/serve_cluster.sh with 3 replicas of
# synthetic:tiny behind nginx; under load (6 streams), replica 0 is killed with SIGKILL.
#  1. its streams fail fast with a clear error: curl exits 18 ("transfer closed with outstanding
#     read data remaining") within 3 s, without [DONE] — never a hang, never a short answer
#     that looks whole; its non-streamed request (no header sent yet) is re-run on a survivor
#     (nginx's `non_idempotent` retry) and answers 200;
#  2. requests sent while it is down (the cluster restarts it after 4 s) all succeed, answered by the survivors (nginx retries a
#     refused connection on the next replica and skips the dead one for --fail-timeout);
#  3. the other streams finish with [DONE];
#  4. the cluster restarts the replica on its port, and nginx sends it traffic again;
#  5. SIGTERM stops the cluster (exit 0).
# Skips (77) without nginx, curl or python3.
#   cluster_kill.sh NANOSERVE SOURCE_DIR
set -euo pipefail
bin=$1 root=$2
for tool in nginx curl python3; do
  command -v $tool >/dev/null || { echo "skip: no $tool (scripts/bootstrap.sh installs it)"; exit 77; }
done
work=$(mktemp -d)
cluster_pid=""
cleanup() {
  if [[ -n $cluster_pid ]] && kill -TERM "$cluster_pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$cluster_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [[ -s $work/cluster/replicas ]]; then  # anything left after a failure
    while read -r _ _ pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$work/cluster/replicas"
  fi
  [[ -s $work/cluster/nginx.pid ]] && kill -KILL "$(cat "$work/cluster/nginx.pid")" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  echo "--- cluster log"; cat "$work/cluster.log"
  echo "--- nginx error log"; tail -n 20 "$work/cluster/nginx_error.log" 2>/dev/null || true
  exit 1
}
now() { date +%s.%N; }
t0=$(now)
say() { printf '[%5.1f s] %s\n' "$(awk "BEGIN { print $(now) - $t0 }")" "$*"; }

# The restart waits 4 s, so that step 2 runs while the replica is really down.
bash "$root/scripts/serve_cluster.sh" -n 3 -p 0 --bin "$bin" --dir "$work/cluster" \
  --port-file "$work/port" --fail-timeout 1 --restart-delay 4 \
  -- -m synthetic:tiny --served-model-name tiny >"$work/cluster.log" 2>&1 &
cluster_pid=$!
for _ in $(seq 1 300); do
  [[ -s $work/port ]] && break
  kill -0 "$cluster_pid" 2>/dev/null || fail "the cluster did not start"
  sleep 0.1
done
[[ -s $work/port ]] || fail "the cluster did not start in 30 s"
url="http://127.0.0.1:$(cat "$work/port")"
read -r _ victim_port victim_pid < <(head -n 1 "$work/cluster/replicas")
say "cluster at $url; replica 0 (the victim) on port $victim_port, pid $victim_pid"

# stream I: a streamed completion of 40 tokens; headers, body, exit code and end time to files.
stream() {
  local rc=0
  curl -sSN --max-time 60 -D "$work/h$1" "$url/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"tiny\", \"prompt\": \"story $1\", \"max_tokens\": 40, \"ignore_eos\": true, \"stream\": true}" \
    >"$work/b$1" 2>"$work/e$1" || rc=$?
  echo "$rc $(now)" >"$work/rc$1"
}
for i in 1 2 3 4 5 6; do stream $i & done
for i in 1 2 3 4 5 6; do  # every stream has begun (its replica answered)
  for _ in $(seq 1 200); do grep -q '^data: {' "$work/b$i" 2>/dev/null && break; sleep 0.05; done
  grep -q '^data: {' "$work/b$i" || fail "stream $i did not start in 10 s"
done
# plain I: a non-streamed completion of 20 tokens (its header comes only with the answer).
plain() {
  local code
  code=$(curl -s -o "$work/b$1" -D "$work/h$1" -w '%{http_code}' --max-time 60 "$url/v1/completions" \
         -H 'Content-Type: application/json' \
         -d "{\"model\": \"tiny\", \"prompt\": \"plain $1\", \"max_tokens\": 20, \"ignore_eos\": true}" || true)
  echo "$code" >"$work/rc$1"
}
# Three in a row go to the three replicas in turn (round robin; the streams are placed already).
for i in 7 8 9; do plain $i & sleep 0.2; done
victims=() survivors=()
for i in 1 2 3 4 5 6; do
  if grep -qi "^X-Upstream: 127.0.0.1:$victim_port" "$work/h$i"; then victims+=($i); else survivors+=($i); fi
done
((${#victims[@]} >= 1)) || fail "no stream went to replica 0 (round robin over 3 replicas, 6 streams)"
say "streams on replica 0: ${victims[*]}; on the others: ${survivors[*]}"

# 1. Kill replica 0 under load: its streams fail fast.
t_kill=$(now)
kill -KILL "$victim_pid"
for i in "${victims[@]}"; do
  for _ in $(seq 1 60); do [[ -s $work/rc$i ]] && break; sleep 0.05; done
  [[ -s $work/rc$i ]] || fail "stream $i on the killed replica still runs 3 s after the kill (a hang)"
  read -r rc t_end <"$work/rc$i"
  ((rc != 0)) || fail "stream $i on the killed replica ended as if complete"
  ! grep -q '^data: \[DONE\]' "$work/b$i" || fail "stream $i on the killed replica has [DONE]"
  say "$(printf 'stream %s: curl exit %s %.2f s after the kill: %s' "$i" "$rc" \
         "$(awk "BEGIN { print $t_end - $t_kill }")" "$(cat "$work/e$i")")"
  [[ $rc == 18 ]] || fail "stream $i: curl exit $rc, expected 18 (the response was cut)"
done

# 2. While it is down, new requests go to the survivors (nginx retries the refused connection
#    on the next replica: X-Upstream then lists both).
down=0 retried=0
for k in $(seq 1 4); do
  code=$(curl -s -o "$work/new$k" -D "$work/newh$k" -w '%{http_code}' --max-time 10 "$url/v1/completions" \
         -H 'Content-Type: application/json' -d '{"model": "tiny", "prompt": "new", "max_tokens": 2}')
  [[ $code == 200 ]] || fail "request $k after the kill got HTTP $code: $(cat "$work/new$k")"
  upstreams=$(grep -i '^X-Upstream:' "$work/newh$k" | tr -d '\r' | cut -d' ' -f2-)
  [[ $upstreams == *,* ]] && retried=$((retried + 1))
  grep -q "replica 0 is back" "$work/cluster.log" && continue  # (a slow machine) it may serve again
  down=$((down + 1))
  [[ ${upstreams##* } != "127.0.0.1:$victim_port" ]] || fail "request $k was answered by the dead replica?"
done
grep -q "replica 0 .*exited" "$work/cluster.log" || fail "the cluster did not notice the death"
((down >= 1)) || fail "replica 0 came back before any request was sent (restart delay 4 s)"
say "4 requests after the kill: all 200; $down sent while replica 0 was down, all answered by the" \
     "survivors; $retried retried on the next replica"

for i in 7 8 9; do
  for _ in $(seq 1 400); do [[ -s $work/rc$i ]] && break; sleep 0.05; done
  [[ $(cat "$work/rc$i" 2>/dev/null) == 200 ]] ||
    fail "non-streamed request $i got HTTP $(cat "$work/rc$i" 2>/dev/null) ($(cat "$work/b$i" 2>/dev/null))"
done
rerun=$(grep -il "^X-Upstream: 127.0.0.1:$victim_port, " "$work"/h7 "$work"/h8 "$work"/h9 | wc -l)
((rerun == 1)) || fail "$rerun non-streamed requests were re-run away from replica 0, expected 1:" \
  "$(grep -ih '^X-Upstream' "$work"/h7 "$work"/h8 "$work"/h9)"
say "non-streamed requests: all 200; the one in flight on replica 0 was re-run on a survivor"

# 3. The other streams finish.
for i in "${survivors[@]}"; do
  for _ in $(seq 1 300); do [[ -s $work/rc$i ]] && break; sleep 0.05; done
  [[ -s $work/rc$i ]] || fail "stream $i on a survivor did not finish in 15 s"
  read -r rc _ <"$work/rc$i"
  [[ $rc == 0 ]] && tail -n 2 "$work/b$i" | grep -q '^data: \[DONE\]$' ||
    fail "stream $i on a survivor did not end with [DONE] (curl exit $rc)"
done
say "streams on the survivors: all ended with [DONE]"

# 4. The replica comes back on its port and gets traffic again (nginx retries it after 1 s).
for _ in $(seq 1 100); do grep -q "replica 0 is back" "$work/cluster.log" && break; sleep 0.1; done
grep -q "replica 0 is back" "$work/cluster.log" || fail "replica 0 was not restarted"
back=0
for k in $(seq 1 30); do
  served=$(curl -s -o /dev/null -D - --max-time 10 "$url/v1/completions" -H 'Content-Type: application/json' \
           -d '{"model": "tiny", "prompt": "again", "max_tokens": 2}' | grep -i '^X-Upstream:' | tr -d '\r' | awk '{print $NF}')
  if [[ $served == "127.0.0.1:$victim_port" ]]; then back=$k; break; fi
  sleep 0.2
done
((back > 0)) || fail "the restarted replica got none of 30 requests"
say "replica 0 restarted and answered request $back after its return"

# 5. SIGTERM stops the cluster.
kill -TERM "$cluster_pid"
for _ in $(seq 1 150); do kill -0 "$cluster_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$cluster_pid" 2>/dev/null; then fail "the cluster did not stop within 15 s of SIGTERM"; fi
rc=0
wait "$cluster_pid" || rc=$?
cluster_pid=""
[[ $rc == 0 ]] || fail "the cluster exited $rc after SIGTERM"
say "cluster stopped (exit 0)"
