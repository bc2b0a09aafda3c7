#!/usr/bin/env bash
# Proves scripts/check_doc_paths.sh can fail: a tiny git tree whose tutorial names existing
# paths (backticked, brace-expanded, a bare file name, a relative image link, a git-ignored
# output) must pass; the same tree with a renamed file, a broken image link and an unknown bare
# file name must be refused, naming each with its file and line.
set -euo pipefail
check=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && git init -q .
mkdir -p common/engine/kv chapters/ch01_a docs/images
touch common/engine/kv/block_pool.h common/engine/kv/block_pool.cpp docs/images/plot.png
echo '/data/models/' > .gitignore
cat > chapters/ch01_a/README.md <<'EOF'
# A chapter
1. `common/engine/kv/block_pool.{h,cpp}` and `block_pool.h` — the pool (`common/engine/kv/`).
2. Models go to `data/models/`, placeholders like `chapters/chNN_*/README.md` are skipped.

![a plot](../../docs/images/plot.png)

```
common/engine/gone.h   (fenced blocks are not read)
```
EOF
git add -A && bash "$check" . >/dev/null || { echo "a clean tree was refused"; exit 1; }
cat >> chapters/ch01_a/README.md <<'EOF'
3. `common/engine/block_pool.h` — moved away long ago.
![another plot](plot.png)
4. `spec_paged_model.h` — renamed.
EOF
git add -A
if out=$(bash "$check" .); then echo "missing paths were accepted"; exit 1; fi
grep -q "chapters/ch01_a/README.md:10: 'common/engine/block_pool.h'" <<<"$out" ||
  { echo "the moved file is not named: $out"; exit 1; }
grep -q "chapters/ch01_a/README.md:11: link 'plot.png'" <<<"$out" ||
  { echo "the broken image link is not named: $out"; exit 1; }
grep -q "chapters/ch01_a/README.md:12: file name 'spec_paged_model.h'" <<<"$out" ||
  { echo "the unknown file name is not named: $out"; exit 1; }
[[ $(wc -l <<<"$out") -eq 3 ]] || { echo "more than the three missing paths reported: $out"; exit 1; }
echo "ok: $out"
