#!/usr/bin/env bash
# Downloads real models into data/models/ (git-ignored); nanoserve finds them there by name.
#   data/download_models.sh stories260K        # ~1 MB, the tour's model (sha256-verified)
#   data/download_models.sh tinystories-656k   # ~2.7 MB, Hugging Face format (sha256-verified)
#   data/download_models.sh stories15M stories42M stories110M   # 58 / 167 / 438 MB
# Files whose sha256 is pinned below are verified and deleted on mismatch; the larger stories
# models are not pinned here (we could not fetch them when writing this), so their sha256 is
# printed for you to compare with the one Hugging Face shows.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p models

hf=https://huggingface.co
tiny=$hf/karpathy/tinyllamas/resolve/main
declare -A url=(
  [stories260K.bin]=$tiny/stories260K/stories260K.bin
  [tok512.bin]=$tiny/stories260K/tok512.bin
  [tokenizer.bin]=https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin
  [stories15M.bin]=$tiny/stories15M.bin
  [stories42M.bin]=$tiny/stories42M.bin
  [stories110M.bin]=$tiny/stories110M.bin
  [tinystories-656k/config.json]=$hf/raincandy-u/TinyStories-656K/resolve/main/config.json
  [tinystories-656k/model.safetensors]=$hf/raincandy-u/TinyStories-656K/resolve/main/model.safetensors
  [tinystories-656k/tokenizer.json]=$hf/raincandy-u/TinyStories-656K/resolve/main/tokenizer.json
)
# The same hashes as ../shared/data/SHA256SUMS (the copies the project's tests were written with).
declare -A sha=(
  [stories260K.bin]=b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696
  [tok512.bin]=037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312
  [tokenizer.bin]=50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361
  [tinystories-656k/config.json]=5d34a34a12acbd8b0d4d8b400cb4ad72e6cdd49673d4b27b5b4c4e93030bc7ee
  [tinystories-656k/model.safetensors]=187d0d5e8360d9625e40e0b35ec57d1ef0eea1a60ddcf09412246bed3484852f
  [tinystories-656k/tokenizer.json]=9a7917d490ac034a4e69eb081096226971887e9e66b0969355421613f62b12e7
)
declare -A group=(
  [stories260K]="stories260K.bin tok512.bin"
  [tinystories-656k]="tinystories-656k/config.json tinystories-656k/model.safetensors tinystories-656k/tokenizer.json"
  [stories15M]="stories15M.bin tokenizer.bin"
  [stories42M]="stories42M.bin tokenizer.bin"
  [stories110M]="stories110M.bin tokenizer.bin"
)

fetch() {
  local f=$1 out=models/$1
  mkdir -p "$(dirname "$out")"
  if [[ ! -s "$out" ]]; then
    echo "downloading $f" >&2
    curl -fL --retry 2 --connect-timeout 10 -o "$out.part" "${url[$f]}" || {
      rm -f "$out.part"; echo "error: could not download ${url[$f]} (offline?)" >&2; return 1; }
    mv "$out.part" "$out"
  fi
  local got
  got=$(sha256sum "$out" | cut -d' ' -f1)
  if [[ -n "${sha[$f]:-}" ]]; then
    if [[ "$got" != "${sha[$f]}" ]]; then
      rm -f "$out"
      echo "error: $f: sha256 $got does not match the pinned ${sha[$f]}; deleted" >&2
      return 1
    fi
    echo "ok  $out (sha256 verified)" >&2
  else
    echo "ok  $out (sha256 $got, not pinned)" >&2
  fi
}

(($# > 0)) || set -- stories260K
for name in "$@"; do
  [[ -n "${group[$name]:-}" ]] || { echo "unknown model '$name'; known: ${!group[*]}" >&2; exit 2; }
  for f in ${group[$name]}; do fetch "$f"; done
done
