#!/usr/bin/env bash
# expect_failure.sh PATTERN CMD...: passes when CMD exits non-zero (not by a signal) and its
# stderr contains PATTERN (an extended regex) — the "clear error, never a crash" policy.
# Exit 77 with "skipped: …" on stderr (a missing data file) passes through as a skip.
pattern=$1
shift
err=$("$@" 2>&1 >/dev/null)
rc=$?
if ((rc == 77)) && grep -q '^skipped:' <<<"$err"; then echo "$err"; exit 77; fi
if ((rc == 0)); then echo "expected failure, got exit 0"; exit 1; fi
if ((rc >= 128)); then echo "killed by signal $((rc - 128)): $err"; exit 1; fi
if ! grep -Eq -- "$pattern" <<<"$err"; then echo "stderr lacks /$pattern/: $err"; exit 1; fi
echo "ok (exit $rc): $err"
