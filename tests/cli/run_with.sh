#!/usr/bin/env bash
# run_with.sh [OPTIONS] -- CMD...: runs CMD in the conditions a bad-input test needs, so that
# expect_failure.sh / expect_output.sh can check its exit code and message.
#   --stdout FILE     CMD's stdout goes to FILE (e.g. /dev/full: a full disk)
#   --ulimit-kb N     address-space limit (ulimit -v) in KiB: memory must follow the work
#   --timeout S       a hang becomes exit 124 (never a stuck CI job); default 60
# In CMD's arguments these words are replaced by scratch inputs made for the run:
#   @FIFO@            a named pipe with no writer
#   @DIR@             a directory
#   @EMPTY@           an empty file
#   @DELIMITERS@      a text of only document delimiters ("\n<|endoftext|>\n", twice)
#   @DEEP_TRACE@      a JSONL trace whose first line nests 300,000 arrays in a field
#   @DEEP_TOKENIZER@  a tokenizer.json nesting 300,000 arrays (its tokenizer_config.json beside it)
#   @DEEP_HF_DIR@     a Hugging Face directory whose config.json nests 300,000 arrays
#   @FAR_TRACE@       a trace whose second request arrives 9,999,999.5 s after the first
#   @GGUF_CTX_N@      stories260K.gguf (from $NANOSERVE_DATA) claiming llama.context_length N;
#                     without that file the test is skipped (exit 77, the SKIP_RETURN_CODE)
set -u
stdout=/dev/stdout ulimit_kb="" timeout_s=60
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --stdout) stdout=$2; shift 2 ;;
    --ulimit-kb) ulimit_kb=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    *) echo "run_with.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift  # the --
scratch=$(mktemp -d "${TMPDIR:-/tmp}/nanoserve-bad-input.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
deep() { head -c 300000 /dev/zero | tr '\0' '['; head -c 300000 /dev/zero | tr '\0' ']'; }
args=()
for a in "$@"; do
  case "$a" in
    @FIFO@) mkfifo "$scratch/fifo"; a="$scratch/fifo" ;;
    @DIR@) mkdir -p "$scratch/dir"; a="$scratch/dir" ;;
    @EMPTY@) : > "$scratch/empty.txt"; a="$scratch/empty.txt" ;;
    @DELIMITERS@)
      printf '\n<|endoftext|>\n\n<|endoftext|>\n' > "$scratch/delimiters.txt"
      a="$scratch/delimiters.txt" ;;
    @DEEP_TRACE@)
      { printf '{"arrival_s": '; deep; printf ', "prompt_len": 4, "max_tokens": 2, "seed": 1}\n'; } \
        > "$scratch/deep.jsonl"
      a="$scratch/deep.jsonl" ;;
    @DEEP_TOKENIZER@)
      mkdir -p "$scratch/tok"
      { printf '{"model": {"type": "BPE", "dropout": '; deep; printf '}}'; } > "$scratch/tok/tokenizer.json"
      printf '{"bos_token": "<s>", "eos_token": "</s>"}' > "$scratch/tok/tokenizer_config.json"
      a="$scratch/tok/tokenizer.json" ;;
    @DEEP_HF_DIR@)
      mkdir -p "$scratch/hf"
      { printf '{"model_type": '; deep; printf '}'; } > "$scratch/hf/config.json"
      : > "$scratch/hf/model.safetensors"
      a="$scratch/hf" ;;
    @GGUF_CTX_*@)
      src="${NANOSERVE_DATA:-}/stories260K.gguf"
      [[ -f "$src" ]] || { echo "skipped: $src not found (set NANOSERVE_DATA)" >&2; exit 77; }
      n=${a#@GGUF_CTX_}; n=${n%@}
      cp "$src" "$scratch/ctx.gguf"
      key=llama.context_length  # u64 length, the key, u32 type, then the u32 value
      at=$(grep -boa "$key" "$scratch/ctx.gguf" | head -n 1 | cut -d: -f1)
      printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)) \
        $((n >> 16 & 255)) $((n >> 24 & 255)))" |
        dd of="$scratch/ctx.gguf" bs=1 seek=$((at + ${#key} + 4)) conv=notrunc status=none
      a="$scratch/ctx.gguf" ;;
    @FAR_TRACE@)
      printf '%s\n' '{"arrival_s": 0, "prompt_len": 4, "max_tokens": 2, "seed": 1}' \
        '{"arrival_s": 9999999.5, "prompt_len": 4, "max_tokens": 2, "seed": 2}' > "$scratch/far.jsonl"
      a="$scratch/far.jsonl" ;;
  esac
  args+=("$a")
done
(
  [[ -n "$ulimit_kb" ]] && ulimit -v "$ulimit_kb"
  exec timeout "$timeout_s" "${args[@]}" > "$stdout"
)
