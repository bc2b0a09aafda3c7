#!/usr/bin/env bash
# expect_run_fails.sh SECONDS PATTERN CMD...: passes when CMD (an mpirun) exits non-zero within
# SECONDS — not killed by this script's timeout, i.e. the run did not hang — and its output
# (stdout and stderr) matches PATTERN, an extended regex: a failed rank ends the whole run, fast
# and with a clear message.
limit=$1 pattern=$2
shift 2
start=$(date +%s)
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out"
echo "--- exit $rc after ${took}s"
if ((rc == 124 || took >= limit)); then echo "FAIL: the run hung (killed after ${limit}s)"; exit 1; fi
if ((rc == 0)); then echo "FAIL: the run succeeded"; exit 1; fi
if ! grep -Eq -- "$pattern" <<<"$out"; then echo "FAIL: output lacks /$pattern/"; exit 1; fi
echo "ok: failed fast (exit $rc, ${took}s) with /$pattern/"
