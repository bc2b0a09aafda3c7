#!/usr/bin/env bash
# chat_smoke.sh NANOSERVE TEMPLATE: `nanoserve chat` on synthetic:tiny fed two user lines by a
# here-doc; each turn must stream a reply and report its prompt growing with the conversation.
set -euo pipefail
nanoserve=$1 template=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$("$nanoserve" chat -m synthetic:tiny --template "$template" --system S -n 8 -t 0 2>"$err" <<'LINES'
hi
how are you?
LINES
)
cat "$err"
grep -q "2 turns" "$err" || { echo "expected 2 turns"; exit 1; }
mapfile -t prompts < <(grep -o '\[[0-9]* prompt tokens, 8 generated' "$err" | grep -o '^\[[0-9]*' | tr -d '[')
((${#prompts[@]} == 2)) || { echo "expected two turn reports"; exit 1; }
# The second prompt holds the first turn, its reply and the new line.
((prompts[1] > prompts[0] + 8)) || { echo "second prompt ${prompts[1]} does not extend ${prompts[0]}"; exit 1; }
(($(wc -l <<<"$out") == 2)) || { echo "expected two reply lines on stdout, got: $out"; exit 1; }
echo ok
