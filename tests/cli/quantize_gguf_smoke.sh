#!/usr/bin/env bash
# quantize_gguf_smoke.sh NANOSERVE: `nanoserve quantize --out FILE.gguf` on TinyStories-656K
# (a Hugging Face llama: rows of 128 and 384, whole 32-blocks). GPTQ int4-g32 into Q4_0 and RTN
# int8-g32 into Q8_0 are lossless, so the GGUF file generates the same greedy story as the NSQM
# file of the same quantization (on the oracle, and the GGUF on the kernels too). stories260K's
# 172-wide ffn_down rows are refused by name. Skips (77) when the model is not found.
set -euo pipefail
ns=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=tinystories-656k
if ! "$ns" info -m "$src" >/dev/null 2>&1; then
  echo "skipped: $src not found; set NANOSERVE_DATA" >&2
  exit 77
fi
story() { "$ns" generate -m "$1" -n 24 -t 0 "${@:2}" 2>/dev/null | head -1; }
for args in "--method gptq --bits 4" "--method rtn --bits 8"; do
  # shellcheck disable=SC2086
  "$ns" quantize -m "$src" $args --group 32 --out "$tmp/q.nsqm" >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$ns" quantize -m "$src" $args --out "$tmp/q.gguf" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
  grep -q "g32-sym (GGUF q[48]_0, lossless)" "$tmp/log" || { echo "no scheme line: $(cat "$tmp/log")"; exit 1; }
  want=$(story "$tmp/q.nsqm" --device cpu)
  [[ -n "$want" ]] || { echo "$args: the NSQM file generated nothing"; exit 1; }
  for device in cpu gpu; do
    got=$(story "$tmp/q.gguf" --device "$device")
    [[ "$got" == "$want" ]] || { echo "$args --device $device: '$got' != NSQM's '$want'"; exit 1; }
  done
  echo "ok $args: $want"
done
if "$ns" info -m stories260K.bin >/dev/null 2>&1; then
  if "$ns" quantize -m stories260K.bin --out "$tmp/s.gguf" 2>"$tmp/err" >/dev/null; then
    echo "stories260K's 172-wide rows were accepted as Q4_0"; exit 1
  fi
  grep -q "blk.0.ffn_down.weight: rows of 172 columns are not whole 32-column Q4_0 blocks" "$tmp/err" ||
    { cat "$tmp/err"; exit 1; }
fi
echo ok
