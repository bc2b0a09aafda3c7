#!/usr/bin/env bash
# Shared by the server's shell tests: start `nanoserve serve` on a free loopback port and stop
# it, bounded in time. Source it, then: start_server NANOSERVE ARGS...; stop_server.
# `launcher` (an array, e.g. mpirun and its flags) runs the server under it; stop_server sends
# its SIGTERM to `signal_pid` when set (a rank under mpirun), else to the server.
server_pid="" port="" server_log="" signal_pid=""
launcher=()
start_server() {
  local bin=$1
  shift
  local dir
  dir=$(mktemp -d)
  server_log="$dir/server.log"
  "${launcher[@]}" "$bin" serve --port 0 --port-file "$dir/port" "$@" >"$server_log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 200); do  # at most 20 s to load the model and bind
    [[ -s "$dir/port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { echo "server died:"; cat "$server_log"; exit 1; }
    sleep 0.1
  done
  [[ -s "$dir/port" ]] || { echo "server did not start in 20 s"; cat "$server_log"; exit 1; }
  port=$(cat "$dir/port")
}
# Sends SIGTERM and waits at most $1 seconds (default 20) for the exit; sets $server_rc.
server_rc=""
stop_server() {
  local limit=${1:-20}
  kill -TERM "${signal_pid:-$server_pid}" 2>/dev/null || true
  for _ in $(seq 1 $((limit * 10))); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid"
    echo "FAILED: the server did not exit within ${limit} s of SIGTERM"
    cat "$server_log"
    exit 1
  fi
  wait "$server_pid" && server_rc=0 || server_rc=$?
}
