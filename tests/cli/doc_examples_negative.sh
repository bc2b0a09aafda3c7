#!/usr/bin/env bash
# The engine-examples check must be able to fail: a type without an example, and one whose
# snippet names a marker its test file does not hold, are refused with each one named; a
# nested or forward-declared type is not asked for one; the same header fixed passes.
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/common/engine/kv" "$tmp/tests/ch02"
cat > "$tmp/common/engine/kv/pool.h" <<'H'
struct Later;
/// \brief No example yet.
class Pool {
  struct Detail {};
};
/// \brief A snippet whose test has no such marker.
///
/// \par Example
/// \snippet tests/ch02/test_pool.cpp Table
struct Table {};
H
printf '//! [Pool]\nPool p;\n//! [Pool]\n' > "$tmp/tests/ch02/test_pool.cpp"
if out=$(python3 "$check" "$tmp" 2>&1); then
  echo "FAILED: the check passed types without examples"; exit 1
fi
for want in "pool.h:3: Pool (no \\snippet or \\code example" \
            'pool.h:10: Table (tests/ch02/test_pool.cpp has 0 "//! [Table]" markers'; do
  grep -qF "$want" <<<"$out" || { echo "FAILED: '$want' not reported in: $out"; exit 1; }
done
if grep -qE "Later|Detail" <<<"$out"; then echo "FAILED: asked nested/forward types: $out"; exit 1; fi
sed -i 's|^class Pool {|/// \\snippet tests/ch02/test_pool.cpp Pool\nclass Pool {|' "$tmp/common/engine/kv/pool.h"
printf '//! [Table]\nTable t;\n//! [Table]\n' >> "$tmp/tests/ch02/test_pool.cpp"
python3 "$check" "$tmp" >/dev/null || { echo "FAILED: the fixed header is refused"; exit 1; }
echo "ok"
