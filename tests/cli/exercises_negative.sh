#!/usr/bin/env bash
# scripts/exercises.py must refuse broken markers with the file and line, and render a region
# as hint + stub: a tree with one good region is stubbed as expected, and each broken variant
# (no END, no HINT, no STUB, no points, END without BEGIN) is refused naming what is wrong.
set -euo pipefail
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
good='int f() {
  // BEGIN EXERCISE ch09.1 "Return the answer" points=5 minutes=10
  // HINT: the answer is 42
  // STUB: return 0;
  return 42;
  // END EXERCISE
}'
mkdir -p "$tmp/ok/src"
printf '%s\n' "$good" > "$tmp/ok/src/a.cpp"
python3 "$tool" student --root "$tmp/ok" --out "$tmp/student" >/dev/null
grep -q "^  return 0;$" "$tmp/student/src/a.cpp" || { echo "FAILED: stub not written"; exit 1; }
grep -q "return 42" "$tmp/student/src/a.cpp" && { echo "FAILED: reference left in the student copy"; exit 1; }
grep -q "HINT: the answer is 42" "$tmp/student/src/a.cpp" || { echo "FAILED: hint dropped"; exit 1; }
python3 "$tool" list --root "$tmp/student" >/dev/null || { echo "FAILED: the student tree cannot be listed"; exit 1; }
refuse() {  # name, sed expression that breaks the good region, expected message
  rm -rf "$tmp/bad"; mkdir -p "$tmp/bad"
  printf '%s\n' "$good" | sed "$2" > "$tmp/bad/a.cpp"
  if out=$(python3 "$tool" list --root "$tmp/bad" 2>&1); then
    echo "FAILED ($1): accepted"; exit 1
  fi
  grep -qF "$3" <<<"$out" || { echo "FAILED ($1): '$3' not in: $out"; exit 1; }
}
refuse "no END" '/END EXERCISE/d' "a.cpp:2: BEGIN EXERCISE ch09.1 is never closed"
refuse "no HINT" '/HINT/d' "has no HINT line"
refuse "no STUB" '/STUB/d' "has no STUB line"
refuse "no points" 's/ points=5//' "declares no points=N"
refuse "END alone" '/BEGIN EXERCISE/d' "a.cpp:5: END EXERCISE without BEGIN"
echo "ok"
