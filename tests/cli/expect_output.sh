#!/usr/bin/env bash
# expect_output.sh PATTERN CMD...: passes when CMD exits 0 and its stdout contains PATTERN (an
# extended regex) — a run that must succeed AND say something (e.g. how many requests were
# rejected), checked on both, never on a regex alone.
pattern=$1
shift
errfile=$(mktemp)
out=$("$@" 2>"$errfile")
rc=$?
err=$(cat "$errfile"); rm -f "$errfile"
if ((rc == 77)) && grep -q '^skipped:' <<<"$err"; then echo "$err"; exit 77; fi
if ((rc != 0)); then echo "expected exit 0, got $rc: $err"; exit 1; fi
if ! grep -Eq -- "$pattern" <<<"$out"; then echo "stdout lacks /$pattern/: $out"; exit 1; fi
echo "ok: $(grep -E -- "$pattern" <<<"$out" | head -n 3)"
