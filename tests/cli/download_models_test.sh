#!/usr/bin/env bash
# download_models_test.sh: data/download_models.sh against a local mirror (HF_ENDPOINT=file://…),
# since nothing online can be reached from CI: --list names every model of issue 14; a sharded
# HF checkpoint is fetched shard by shard from its index; an unpinned file has its sha256
# printed; a pinned file with the wrong bytes is deleted and the run fails; --quant picks the
# GGUF file; unknown names and options are refused.
set -euo pipefail
script=$(cd "$(dirname "$0")/../../data" && pwd)/download_models.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

list=$(bash "$script" --list)
for n in Llama-3.2-1B Llama-3.2-1B-Instruct Llama-3.2-3B Llama-3.2-3B-Instruct Llama-3.1-8B \
         Llama-3.1-8B-Instruct Qwen2.5-0.5B Qwen2.5-0.5B-Instruct Qwen2.5-1.5B Qwen2.5-1.5B-Instruct \
         Qwen2.5-7B Qwen2.5-7B-Instruct SmolLM2-135M SmolLM2-360M SmolLM2-1.7B TinyLlama-1.1B-Chat \
         Mistral-7B-v0.1 Mistral-7B-Instruct-v0.2 Llama-2-7B stories15M stories42M stories110M \
         stories260K tinystories-656k Qwen2.5-0.5B-Instruct-GGUF Llama-3.1-8B-Instruct-GGUF; do
  grep -q "^$n " <<<"$list" || fail "--list lacks $n"
done
grep -q "^stories260K .* pinned$" <<<"$list" || fail "stories260K is not shown pinned"
grep -q "^Qwen2.5-7B .*unpinned, verify on first download" <<<"$list" || fail "Qwen2.5-7B not unpinned"

# The mirror: a two-shard Qwen2.5-0.5B, a GGUF at Q8_0, a stories260K with the wrong bytes.
q=$tmp/mirror/Qwen/Qwen2.5-0.5B/resolve/main
mkdir -p "$q" "$tmp/mirror/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main" \
         "$tmp/mirror/karpathy/tinyllamas/resolve/main/stories260K"
echo '{"architectures": ["Qwen2ForCausalLM"]}' >"$q/config.json"
echo '{"model": {}}' >"$q/tokenizer.json"
echo '{}' >"$q/tokenizer_config.json"
cat >"$q/model.safetensors.index.json" <<'JSON'
{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
 "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}
JSON
echo shard1 >"$q/model-00001-of-00002.safetensors"
echo shard2 >"$q/model-00002-of-00002.safetensors"
echo gguf >"$tmp/mirror/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q8_0.gguf"
echo wrong >"$tmp/mirror/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin"
export HF_ENDPOINT=file://$tmp/mirror

log=$(bash "$script" --dir "$tmp/out" Qwen2.5-0.5B 2>&1) || fail "sharded fetch failed: $log"
for f in config.json tokenizer.json tokenizer_config.json model-00001-of-00002.safetensors \
         model-00002-of-00002.safetensors; do
  cmp -s "$q/$f" "$tmp/out/Qwen2.5-0.5B/$f" || fail "$f not fetched: $log"
done
[[ ! -e "$tmp/out/Qwen2.5-0.5B/model.safetensors" ]] || fail "fetched model.safetensors beside an index"
want=$(sha256sum "$q/model-00002-of-00002.safetensors" | cut -d' ' -f1)
grep -q "unpinned, verify on first download: sha256 $want" <<<"$log" || fail "no sha256 printed: $log"

bash "$script" --dir "$tmp/out" --quant Q8_0 Qwen2.5-0.5B-Instruct-GGUF 2>/dev/null ||
  fail "GGUF fetch failed"
[[ -s "$tmp/out/qwen2.5-0.5b-instruct-q8_0.gguf" ]] || fail "--quant Q8_0 did not pick the q8_0 file"

if log=$(bash "$script" --dir "$tmp/out" stories260K 2>&1); then fail "a wrong pinned file passed"; fi
grep -q "does not match the pinned b0a507e7" <<<"$log" || fail "no mismatch message: $log"
[[ ! -e "$tmp/out/stories260K.bin" ]] || fail "the mismatching file was kept"

if log=$(bash "$script" --dir "$tmp/out" Qwen2.5-1.5B 2>&1); then fail "a missing repository passed"; fi
grep -q "error: could not download" <<<"$log" || fail "no download error: $log"
set +e
bash "$script" no-such-model 2>"$tmp/err"; rc=$?
set -e
((rc == 2)) && grep -q "unknown model 'no-such-model'" "$tmp/err" || fail "unknown name: rc $rc"
if bash "$script" --bogus 2>/dev/null; then fail "an unknown option passed"; fi
echo ok
