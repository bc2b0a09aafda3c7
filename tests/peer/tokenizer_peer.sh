#!/usr/bin/env bash
# Peer check of the tokenizers (label `peer`): the Hugging Face `tokenizers` npm library, run
# live, encodes seeded random texts with each committed tests/data/tokenizers family, and
# nanoserve's ids and decodings must equal its own. Skips (exit 77) when the npm packages are
# not installed: (cd peers && npm ci).
#   tokenizer_peer.sh SOURCE_DIR TEST_COMMON_BINARY [SEED]
set -euo pipefail
root=$1 test_bin=$2 seed=${3:-${NANOSERVE_PEER_SEED:-1}}
if [[ ! -d "$root/peers/node_modules/tokenizers" ]] || ! command -v node >/dev/null; then
  echo "skip: peers/node_modules/tokenizers is not installed (run: cd peers && npm ci)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
node "$root/scripts/make_tokenizer_fixtures.mjs" --random 300 --seed "$seed" - "$out"
NANOSERVE_TOKENIZER_CASES="$out" "$test_bin" --gtest_filter='Families/TokenizerFamily.LiveLibraryCasesWhenGiven/*'
