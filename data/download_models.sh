#!/usr/bin/env bash
# Downloads real models into data/models/ (git-ignored); nanoserve finds them there by name
# (`--model NAME`: a folder for a Hugging Face checkpoint, a file for llama2.c and GGUF).
#   data/download_models.sh --list                       # every name, its format, source, licence
#   data/download_models.sh stories260K                  # ~1 MB, the tour's model (sha256-verified)
#   data/download_models.sh Qwen2.5-0.5B-Instruct        # HF safetensors (+ shards from the index)
#   data/download_models.sh --quant Q8_0 Qwen2.5-0.5B-Instruct-GGUF   # one GGUF file (default Q4_K_M)
#   data/download_models.sh --dir /big/disk Llama-3.1-8B-Instruct     # somewhere else
# Gated repositories (Meta's, Mistral's) need the licence accepted on the model's page and a
# Hugging Face token in HF_TOKEN. HF_ENDPOINT replaces https://huggingface.co (a mirror; the
# tests point it at a local folder).
#
# Integrity: a file whose sha256 is pinned below is verified and deleted on mismatch. Only the
# hashes the project has checked itself are pinned (../shared/data/SHA256SUMS). Every other file
# is "unpinned, verify on first download": nothing here could reach Hugging Face when the list
# was written, so rather than invent a hash the script prints the sha256 it got, to compare with
# the one the model page shows (Files → the file → "SHA256").
set -euo pipefail
cd "$(dirname "$0")"

hf=${HF_ENDPOINT:-https://huggingface.co}
dest=models
quant=Q4_K_M

# ── Catalogue ─────────────────────────────────────────────────────────────────────────────────
# kind[NAME]: files (fixed list below) | hf (a Hugging Face checkpoint folder) | gguf (one file)
# repo[NAME]: owner/name on Hugging Face; gguf_file[NAME]: the file, written with Q4_K_M (or
# q4_k_m), which --quant replaces; lic[NAME]: licence; gated[NAME]: yes/no.
declare -A kind repo gguf_file lic gated
add_hf() { kind[$1]=hf; repo[$1]=$2; lic[$1]=$3; gated[$1]=$4; }
add_gguf() { kind[$1]=gguf; repo[$1]=$2; gguf_file[$1]=$3; lic[$1]=$4; gated[$1]=no; }

for n in stories260K tinystories-656k stories15M stories42M stories110M; do kind[$n]=files; done
repo[stories260K]=karpathy/tinyllamas; lic[stories260K]=MIT; gated[stories260K]=no
repo[tinystories-656k]=raincandy-u/TinyStories-656K; lic[tinystories-656k]=Apache-2.0
gated[tinystories-656k]=no
for n in stories15M stories42M stories110M; do repo[$n]=karpathy/tinyllamas; lic[$n]=MIT; gated[$n]=no; done

L32="Llama-3.2-Community" L31="Llama-3.1-Community" L2="Llama-2-Community" A2=Apache-2.0
add_hf Llama-3.2-1B               meta-llama/Llama-3.2-1B                 $L32 yes
add_hf Llama-3.2-1B-Instruct      meta-llama/Llama-3.2-1B-Instruct        $L32 yes
add_hf Llama-3.2-3B               meta-llama/Llama-3.2-3B                 $L32 yes
add_hf Llama-3.2-3B-Instruct      meta-llama/Llama-3.2-3B-Instruct        $L32 yes
add_hf Llama-3.1-8B               meta-llama/Llama-3.1-8B                 $L31 yes
add_hf Llama-3.1-8B-Instruct      meta-llama/Llama-3.1-8B-Instruct        $L31 yes
add_hf Qwen2.5-0.5B               Qwen/Qwen2.5-0.5B                       $A2 no
add_hf Qwen2.5-0.5B-Instruct      Qwen/Qwen2.5-0.5B-Instruct              $A2 no
add_hf Qwen2.5-1.5B               Qwen/Qwen2.5-1.5B                       $A2 no
add_hf Qwen2.5-1.5B-Instruct      Qwen/Qwen2.5-1.5B-Instruct              $A2 no
add_hf Qwen2.5-7B                 Qwen/Qwen2.5-7B                         $A2 no
add_hf Qwen2.5-7B-Instruct        Qwen/Qwen2.5-7B-Instruct                $A2 no
add_hf SmolLM2-135M               HuggingFaceTB/SmolLM2-135M              $A2 no
add_hf SmolLM2-135M-Instruct      HuggingFaceTB/SmolLM2-135M-Instruct     $A2 no
add_hf SmolLM2-360M               HuggingFaceTB/SmolLM2-360M              $A2 no
add_hf SmolLM2-360M-Instruct      HuggingFaceTB/SmolLM2-360M-Instruct     $A2 no
add_hf SmolLM2-1.7B               HuggingFaceTB/SmolLM2-1.7B              $A2 no
add_hf SmolLM2-1.7B-Instruct      HuggingFaceTB/SmolLM2-1.7B-Instruct     $A2 no
add_hf TinyLlama-1.1B-Chat        TinyLlama/TinyLlama-1.1B-Chat-v1.0      $A2 no
add_hf Mistral-7B-v0.1            mistralai/Mistral-7B-v0.1               $A2 yes
add_hf Mistral-7B-Instruct-v0.2   mistralai/Mistral-7B-Instruct-v0.2      $A2 yes
add_hf Llama-2-7B                 meta-llama/Llama-2-7b-hf                $L2 yes
# GGUF conversions by llama.cpp's tools, from the uploaders people use (not gated).
add_gguf Llama-3.2-1B-Instruct-GGUF bartowski/Llama-3.2-1B-Instruct-GGUF Llama-3.2-1B-Instruct-Q4_K_M.gguf $L32
add_gguf Llama-3.2-3B-Instruct-GGUF bartowski/Llama-3.2-3B-Instruct-GGUF Llama-3.2-3B-Instruct-Q4_K_M.gguf $L32
add_gguf Llama-3.1-8B-Instruct-GGUF bartowski/Meta-Llama-3.1-8B-Instruct-GGUF \
  Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf $L31
add_gguf Qwen2.5-0.5B-Instruct-GGUF Qwen/Qwen2.5-0.5B-Instruct-GGUF qwen2.5-0.5b-instruct-q4_k_m.gguf $A2
add_gguf Qwen2.5-1.5B-Instruct-GGUF Qwen/Qwen2.5-1.5B-Instruct-GGUF qwen2.5-1.5b-instruct-q4_k_m.gguf $A2
add_gguf Qwen2.5-7B-Instruct-GGUF bartowski/Qwen2.5-7B-Instruct-GGUF Qwen2.5-7B-Instruct-Q4_K_M.gguf $A2
add_gguf SmolLM2-1.7B-Instruct-GGUF HuggingFaceTB/SmolLM2-1.7B-Instruct-GGUF \
  smollm2-1.7b-instruct-q4_k_m.gguf $A2
add_gguf TinyLlama-1.1B-Chat-GGUF TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf $A2
add_gguf Mistral-7B-v0.1-GGUF TheBloke/Mistral-7B-v0.1-GGUF mistral-7b-v0.1.Q4_K_M.gguf $A2
add_gguf Mistral-7B-Instruct-v0.2-GGUF TheBloke/Mistral-7B-Instruct-v0.2-GGUF \
  mistral-7b-instruct-v0.2.Q4_K_M.gguf $A2
add_gguf Llama-2-7B-GGUF TheBloke/Llama-2-7B-GGUF llama-2-7b.Q4_K_M.gguf $L2

# The fixed-file models: destination path → URL, and the files of each name.
tiny=$hf/karpathy/tinyllamas/resolve/main
t656=$hf/raincandy-u/TinyStories-656K/resolve/main
declare -A url=(
  [stories260K.bin]=$tiny/stories260K/stories260K.bin
  [tok512.bin]=$tiny/stories260K/tok512.bin
  [tokenizer.bin]=https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin
  [stories15M.bin]=$tiny/stories15M.bin
  [stories42M.bin]=$tiny/stories42M.bin
  [stories110M.bin]=$tiny/stories110M.bin
  [tinystories-656k/config.json]=$t656/config.json
  [tinystories-656k/model.safetensors]=$t656/model.safetensors
  [tinystories-656k/tokenizer.json]=$t656/tokenizer.json
)
declare -A group=(
  [stories260K]="stories260K.bin tok512.bin"
  [tinystories-656k]="tinystories-656k/config.json tinystories-656k/model.safetensors tinystories-656k/tokenizer.json"
  [stories15M]="stories15M.bin tokenizer.bin"
  [stories42M]="stories42M.bin tokenizer.bin"
  [stories110M]="stories110M.bin tokenizer.bin"
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

# ── Fetching ──────────────────────────────────────────────────────────────────────────────────
# get URL OUT [optional]: downloads once (an existing non-empty file is kept). Returns 3 for a
# missing optional file, 1 for any other failure, with the reason.
get() {
  local src=$1 out=$2 optional=${3:-} code auth=()
  [[ -s "$out" ]] && return 0
  mkdir -p "$(dirname "$out")"
  [[ -n "${HF_TOKEN:-}" && "$src" == "$hf"/* ]] && auth=(-H "Authorization: Bearer $HF_TOKEN")
  echo "downloading $src" >&2
  if ! code=$(curl -sSL --retry 2 --connect-timeout 10 "${auth[@]}" -w '%{http_code}' \
                   -o "$out.part" "$src"); then
    rm -f "$out.part"
    [[ -n "$optional" && ( "$src" == file://* ) ]] && return 3
    echo "error: could not download $src (offline?)" >&2; return 1
  fi
  if [[ "$code" == 404 && -n "$optional" ]]; then rm -f "$out.part"; return 3; fi
  if [[ "$code" == 401 || "$code" == 403 ]]; then
    rm -f "$out.part"
    echo "error: $src: HTTP $code: the repository is gated; accept its licence on" \
         "${src%%/resolve/*} and set HF_TOKEN" >&2
    return 1
  fi
  if [[ "$code" != 2* && "$code" != 000 ]]; then
    rm -f "$out.part"; echo "error: $src: HTTP $code" >&2; return 1
  fi
  mv "$out.part" "$out"
}

# check OUT KEY: verifies a pinned sha256 (deleting the file on mismatch) or prints the one got.
check() {
  local out=$1 key=$2 got
  got=$(sha256sum "$out" | cut -d' ' -f1)
  if [[ -n "${sha[$key]:-}" ]]; then
    if [[ "$got" != "${sha[$key]}" ]]; then
      rm -f "$out"
      echo "error: $key: sha256 $got does not match the pinned ${sha[$key]}; deleted" >&2
      return 1
    fi
    echo "ok  $out (sha256 verified)" >&2
  else
    echo "ok  $out (unpinned, verify on first download: sha256 $got)" >&2
  fi
}

fetch_files() {
  local f
  for f in ${group[$1]}; do get "${url[$f]}" "$dest/$f" && check "$dest/$f" "$f" || return 1; done
}

# A Hugging Face checkpoint: config, tokenizer, then the weights — the shards named by
# model.safetensors.index.json when the repository has one, model.safetensors otherwise.
fetch_hf() {
  local name=$1 base="$hf/${repo[$1]}/resolve/main" dir="$dest/$1" f rc shards
  for f in config.json tokenizer.json; do get "$base/$f" "$dir/$f" && check "$dir/$f" "$f" || return 1; done
  for f in tokenizer_config.json generation_config.json special_tokens_map.json; do
    rc=0; get "$base/$f" "$dir/$f" optional || rc=$?
    ((rc == 3)) && continue; ((rc == 0)) || return 1; check "$dir/$f" "$f"
  done
  rc=0; get "$base/model.safetensors.index.json" "$dir/model.safetensors.index.json" optional || rc=$?
  if ((rc == 0)); then
    shards=$(grep -o '"[^"/]*\.safetensors"' "$dir/model.safetensors.index.json" | tr -d '"' | sort -u)
    [[ -n "$shards" ]] || { echo "error: $dir/model.safetensors.index.json names no shard" >&2; return 1; }
  elif ((rc == 3)); then shards=model.safetensors
  else return 1; fi
  for f in $shards; do get "$base/$f" "$dir/$f" && check "$dir/$f" "$f" || return 1; done
}

fetch_gguf() {
  local f=${gguf_file[$1]} q=$quant
  [[ "$quant" =~ ^[A-Za-z0-9_]+$ ]] || { echo "error: --quant '$quant' is not a quant type name" >&2; return 2; }
  if [[ "$f" == *q4_k_m* ]]; then f=${f/q4_k_m/${q,,}}; else f=${f/Q4_K_M/${q^^}}; fi
  get "$hf/${repo[$1]}/resolve/main/$f" "$dest/$f" && check "$dest/$f" "$f"
}

list() {
  local n fmt pin
  printf '%-30s %-5s %-46s %-20s %-5s %s\n' name kind source licence gated sha256
  for n in $(printf '%s\n' "${!kind[@]}" | sort -f); do
    fmt=${kind[$n]}; pin="unpinned, verify on first download"
    if [[ $fmt == files ]]; then
      local f total=0 pinned=0
      for f in ${group[$n]}; do total=$((total + 1)); [[ -n "${sha[$f]:-}" ]] && pinned=$((pinned + 1)); done
      ((pinned == total)) && pin=pinned
      ((pinned > 0 && pinned < total)) && pin="$pinned of $total files pinned, others verify on first download"
    fi
    local src=${repo[$n]}
    [[ $fmt == gguf ]] && src="${repo[$n]}/${gguf_file[$n]}"
    printf '%-30s %-5s %-46s %-20s %-5s %s\n' "$n" "$fmt" "$src" "${lic[$n]}" "${gated[$n]}" "$pin"
  done
}

# ── Command line ──────────────────────────────────────────────────────────────────────────────
names=()
while (($# > 0)); do
  case $1 in
    --list) list; exit 0 ;;
    --dir) (($# > 1)) || { echo "error: --dir needs a folder" >&2; exit 2; }; dest=$2; shift ;;
    --quant) (($# > 1)) || { echo "error: --quant needs a type (Q4_K_M, Q8_0, ...)" >&2; exit 2; }; quant=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "error: unknown option '$1' (--list, --dir DIR, --quant TYPE)" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
((${#names[@]} > 0)) || names=(stories260K)
mkdir -p "$dest"
for name in "${names[@]}"; do
  [[ -n "${kind[$name]:-}" ]] || {
    echo "error: unknown model '$name' (data/download_models.sh --list shows the names)" >&2; exit 2; }
  [[ ${gated[$name]} == yes && -z "${HF_TOKEN:-}" ]] &&
    echo "note: $name is gated: accept its licence on $hf/${repo[$name]} and set HF_TOKEN" >&2
  "fetch_${kind[$name]}" "$name" || exit 1
done
