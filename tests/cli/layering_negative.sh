#!/usr/bin/env bash
# Proves scripts/check_layering.sh can fail: a tiny git tree whose kv/ header includes the
# harness (an include pointing up) and whose chapter includes another chapter must be refused,
# naming both files; the same tree without them must pass.
set -euo pipefail
check=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && git init -q .
mkdir -p common/engine/kv common/harness chapters/ch01_a chapters/ch02_b
echo '#include "common/engine/kv/y.h"' > common/engine/kv/x.h
echo '#include "common/engine/kv/x.h"' > common/harness/h.h
echo '#include "common/harness/h.h"' > chapters/ch02_b/main.cpp
git add -A && bash "$check" . >/dev/null || { echo "a clean tree was refused"; exit 1; }
echo '#include "common/harness/h.h"' >> common/engine/kv/x.h
echo '#include "chapters/ch01_a/a.h"' >> chapters/ch02_b/main.cpp
git add -A
if out=$(bash "$check" .); then echo "an upward include was accepted"; exit 1; fi
grep -q 'common/engine/kv/x.h:2' <<<"$out" || { echo "kv include not named: $out"; exit 1; }
grep -q 'chapters/ch02_b/main.cpp:2' <<<"$out" || { echo "chapter include not named: $out"; exit 1; }
echo "ok: $out"
