#!/usr/bin/env bash
# convert_smoke.sh NANOSERVE: `nanoserve convert` of stories260K.bin (llama2.c) and
# TinyStories-656K (Hugging Face) to GGUF in each --dtype; the fp32 files generate the same
# greedy story as their sources, on the oracle and on the kernels. A write failure (/dev/full)
# names the path. Skips (77) when the models are not found.
set -euo pipefail
ns=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
story() { "$ns" generate -m "$1" -n 24 -t 0 "${@:2}" 2>/dev/null | head -1; }
found=0
for src in stories260K.bin tinystories-656k; do
  if ! "$ns" info -m "$src" >/dev/null 2>&1; then echo "skipping $src: not found"; continue; fi
  found=1
  for dtype in fp32 fp16 bf16 q8_0 q4_0 q4_k; do
    "$ns" convert "$src" "$tmp/$src.$dtype.gguf" --dtype "$dtype" >"$tmp/log" ||
      { cat "$tmp/log"; exit 1; }
    grep -q "wrote .*$src.$dtype.gguf" "$tmp/log" || { echo "no summary: $(cat "$tmp/log")"; exit 1; }
    "$ns" generate -m "$tmp/$src.$dtype.gguf" -n 8 -t 0 >/dev/null
  done
  want=$(story "$src")
  [[ -n "$want" ]] || { echo "$src generated nothing"; exit 1; }
  for device in cpu gpu; do
    got=$(story "$tmp/$src.fp32.gguf" --device "$device")
    [[ "$got" == "$want" ]] || { echo "$src --device $device: '$got' != '$want'"; exit 1; }
  done
  echo "ok $src: $want"
done
((found)) || { echo "skipped: neither stories260K.bin nor tinystories-656k found; set NANOSERVE_DATA" >&2; exit 77; }
if "$ns" convert stories260K.bin /dev/full 2>"$tmp/err" >/dev/null; then echo "/dev/full accepted"; exit 1; fi
grep -q "/dev/full: cannot write: No space left on device" "$tmp/err" || { cat "$tmp/err"; exit 1; }
echo ok
