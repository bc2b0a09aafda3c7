#!/usr/bin/env bash
# N replicas of `nanoserve serve` behind nginx (chapter 8), all on loopback:
#
#     client ──► nginx 127.0.0.1:PORT ──round robin──► replica 0 127.0.0.1:P0 (one engine each)
#                 proxy_buffering off (SSE)          ├► replica 1 127.0.0.1:P1
#                 HTTP/1.1 keepalive upstreams       └► replica 2 …
#
#   scripts/serve_cluster.sh [-n 2] [-p 8000] [--bin NANOSERVE] [--dir DIR] [--fail-timeout 5]
#                            [--no-restart | --restart-delay 0.5] [--port-file F] -- SERVE_ARGS…
#   e.g. scripts/serve_cluster.sh -n 3 -p 8000 -- -m stories260K.bin
#
# What nginx does (the config is written to DIR/nginx.conf; read it):
#  - round robin over the replicas; SSE passes through unbuffered (proxy_buffering off, and the
#    replicas send X-Accel-Buffering: no), upstream connections are HTTP/1.1 and kept alive;
#  - passive health checks: a replica that fails --max-fails times (a refused or reset
#    connection, a 503) is skipped for --fail-timeout seconds, then tried again with one request;
#  - a retry on the next replica only where it is safe: when the replica failed before sending a
#    response header (proxy_next_upstream error http_503 non_idempotent). POST is
#    non-idempotent to nginx, which never retries it by default; a completion is safe to
#    re-run there, because nothing reached the client yet and a completion changes no state on
#    a replica (its prefix cache is a cache). A stream that has started (its header went out as
#    soon as the replica accepted it) is never retried: when its replica dies, nginx cuts the
#    client's connection without the final chunk, so the client sees an error at once instead
#    of a silently shortened answer. `timeout` is not a retry reason: on loopback a dead replica
#    refuses at once, and a read timeout would run a slow request twice.
#  - X-Upstream (response header) and the access log name the replica(s) that served each
#    request: "127.0.0.1:P0, 127.0.0.1:P1" when the first one failed and the second answered.
#
# It runs in the foreground: a replica that exits is restarted on its port (unless
# --no-restart), and SIGTERM/SIGINT stops everything — the replicas drain (their own SIGTERM),
# nginx finishes open connections (QUIT) — then exits 0. nginx runs as the calling user from
# DIR (nginx -p DIR -c DIR/nginx.conf -e DIR/nginx_error.log, its own pid and temp files), so no
# root and no system config is needed. Needs nginx (scripts/bootstrap.sh installs it), python3
# (to find a free port) and curl (to check the replicas are up).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
replicas=2 port=8000 bin="$root/build/sim/apps/nanoserve/nanoserve" dir="" keep=0
fail_timeout=5 max_fails=1 restart=1 port_file="" restart_delay=0.5
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
while (($#)); do
  case $1 in
    -n|--replicas) replicas=$2; shift 2 ;;
    -p|--port) port=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --dir) dir=$2; keep=1; shift 2 ;;
    --fail-timeout) fail_timeout=$2; shift 2 ;;
    --max-fails) max_fails=$2; shift 2 ;;
    --no-restart) restart=0; shift ;;
    --restart-delay) restart_delay=$2; shift 2 ;;
    --port-file) port_file=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; break ;;
    *) echo "serve_cluster: unknown option '$1' (serve's own flags go after --)" >&2; usage 2 ;;
  esac
done
serve_args=("$@")
die() { echo "serve_cluster: $*" >&2; exit 2; }
[[ $replicas =~ ^[0-9]+$ ]] && ((replicas >= 1 && replicas <= 64)) || die "--replicas $replicas must be in [1, 64]"
[[ $port =~ ^[0-9]+$ ]] && ((port <= 65535)) || die "--port $port must be in [0, 65535]"
[[ $fail_timeout =~ ^[0-9]+$ ]] && ((fail_timeout >= 1)) || die "--fail-timeout $fail_timeout must be a whole number of seconds >= 1"
[[ $max_fails =~ ^[0-9]+$ ]] && ((max_fails >= 1)) || die "--max-fails $max_fails must be >= 1"
[[ $restart_delay =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--restart-delay $restart_delay must be seconds >= 0"
for a in "${serve_args[@]}"; do
  case $a in --port|-p|--port=*|--host|--host=*|--port-file|--port-file=*)
    die "'$a' is set by the cluster (each replica listens on 127.0.0.1, a port of its own)" ;;
  esac
done
[[ -x $bin ]] || die "no nanoserve at '$bin' (build it: cmake --build --preset sim --target nanoserve, or pass --bin)"
command -v nginx >/dev/null || die "nginx is not installed (scripts/bootstrap.sh installs it)"
command -v curl >/dev/null || die "curl is not installed"

if [[ -z $dir ]]; then dir=$(mktemp -d -t nanoserve_cluster.XXXXXX); fi
mkdir -p "$dir/tmp"
chmod 755 "$dir" "$dir/tmp"  # nginx's workers (another user when started as root) read here
if ((port == 0)); then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi

pids=() ports=() nginx_pid="" stopping=0
log() { echo "serve_cluster: $*" >&2; }

# start_replica I [PORT]: starts replica I (on PORT, or any free port the first time).
start_replica() {
  local i=$1 p=${2:-0}
  rm -f "$dir/replica$i.port"
  "$bin" serve --host 127.0.0.1 --port "$p" --port-file "$dir/replica$i.port" "${serve_args[@]}" \
    >>"$dir/replica$i.log" 2>&1 &
  pids[i]=$!
}
# wait_replica I: until replica I has written its port (it then accepts connections) or died.
wait_replica() {
  local i=$1
  for _ in $(seq 1 600); do  # 60 s: loading a large model takes a while
    [[ -s "$dir/replica$i.port" ]] && { ports[i]=$(cat "$dir/replica$i.port"); return 0; }
    kill -0 "${pids[i]}" 2>/dev/null || break
    sleep 0.1
  done
  log "replica $i did not start; its log ($dir/replica$i.log):"
  tail -n 20 "$dir/replica$i.log" >&2
  return 1
}

stop_all() {
  stopping=1
  trap - TERM INT
  log "stopping: replicas drain, nginx finishes open connections"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  [[ -n $nginx_pid ]] && kill -QUIT "$nginx_pid" 2>/dev/null || true
  wait || true
  ((keep)) || rm -rf "$dir"
  log "stopped"
}

for ((i = 0; i < replicas; ++i)); do start_replica "$i"; done
for ((i = 0; i < replicas; ++i)); do
  wait_replica "$i" || { stop_all; exit 1; }
done

{
  echo "# Written by scripts/serve_cluster.sh: nginx in front of $replicas nanoserve replicas."
  echo "worker_processes 1;"
  echo "daemon off;"
  echo "pid $dir/nginx.pid;"
  echo "error_log $dir/nginx_error.log notice;"
  echo "events { worker_connections 1024; }"
  echo "http {"
  echo "  log_format upstream '\$time_iso8601 \"\$request\" \$status upstream=\"\$upstream_addr\"'"
  echo "                      ' upstream_status=\"\$upstream_status\" request_time=\$request_time';"
  echo "  access_log $dir/nginx_access.log upstream;"
  for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $dir/tmp/$t;"; done
  echo "  upstream nanoserve {"
  for ((i = 0; i < replicas; ++i)); do
    echo "    server 127.0.0.1:${ports[i]} max_fails=$max_fails fail_timeout=${fail_timeout}s;"
  done
  echo "    keepalive 32;          # idle HTTP/1.1 connections kept to the replicas"
  echo "    keepalive_timeout 1s;  # below the replicas' 2 s: never reuse one they are closing"
  echo "  }"
  echo "  server {"
  echo "    listen 127.0.0.1:$port;"
  echo "    client_max_body_size 1m;"
  echo "    client_body_buffer_size 1m;  # bodies stay in memory (no temp files)"
  echo "    location / {"
  echo "      proxy_pass http://nanoserve;"
  echo "      proxy_http_version 1.1;"
  echo "      proxy_set_header Connection \"\";"
  echo "      proxy_buffering off;         # SSE: every event goes on at once"
  echo "      proxy_connect_timeout 2s;"
  echo "      proxy_read_timeout 600s;     # a long non-streamed answer"
  echo "      proxy_next_upstream error http_503 non_idempotent;  # only before a response began"
  echo "      proxy_next_upstream_tries $replicas;"
  echo "      proxy_next_upstream_timeout 10s;"
  echo "      add_header X-Upstream \$upstream_addr always;"
  echo "    }"
  echo "  }"
  echo "}"
} >"$dir/nginx.conf"
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx_error.log" -t -q 2>&1 | sed 's/^/nginx: /' >&2 ||
  { stop_all; exit 1; }
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx_error.log" &
nginx_pid=$!
trap 'stop_all; exit 0' TERM INT

# nginx is up when it answers (a replica's /health through it).
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/health" && break
  kill -0 "$nginx_pid" 2>/dev/null || { log "nginx exited; $dir/nginx_error.log:"; cat "$dir/nginx_error.log" >&2; stop_all; exit 1; }
  sleep 0.1
done
[[ -n $port_file ]] && echo "$port" >"$port_file"
log "http://127.0.0.1:$port -> $replicas replicas (127.0.0.1:${ports[*]}); config, logs and pids in $dir"
for ((i = 0; i < replicas; ++i)); do echo "$i ${ports[i]} ${pids[i]}"; done >"$dir/replicas"

# Supervise: a replica that exits is restarted on its own port; nginx exiting ends the cluster.
while :; do
  died=""
  wait -n -p died || true  # returns when a child exits, or a trapped signal arrives
  ((stopping)) && break
  [[ -z $died ]] && continue
  if [[ $died == "$nginx_pid" ]]; then
    log "nginx exited; $dir/nginx_error.log:"
    tail -n 20 "$dir/nginx_error.log" >&2
    nginx_pid=""
    stop_all
    exit 1
  fi
  for ((i = 0; i < replicas; ++i)); do
    [[ ${pids[i]} == "$died" ]] || continue
    if ((!restart)); then log "replica $i (port ${ports[i]}) exited; not restarted (--no-restart)"; break; fi
    log "replica $i (port ${ports[i]}) exited; restarting it in ${restart_delay} s"
    sleep "$restart_delay"
    start_replica "$i" "${ports[i]}"
    if wait_replica "$i"; then
      log "replica $i is back on port ${ports[i]} (nginx tries it again within ${fail_timeout} s)"
      for ((j = 0; j < replicas; ++j)); do echo "$j ${ports[j]} ${pids[j]}"; done >"$dir/replicas"
    fi
  done
done
