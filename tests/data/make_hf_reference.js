#!/usr/bin/env node
// Writes hf_tokenizer_reference.json: token ids and decoded texts from the Hugging Face
// `tokenizers` library itself (its Node binding, the same Rust code as the Python package),
// the reference tests/common/test_tokenizer_hf.cpp compares HfBpeTokenizer against.
//
//   npm install --prefix /tmp/hftok tokenizers@0.23.2
//   NODE_PATH=/tmp/hftok/node_modules node tests/data/make_hf_reference.js ../shared/data \
//       > tests/data/hf_tokenizer_reference.json
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const SEPARATOR = '\n<|endoftext|>\n';

// Inputs beyond the sample's first lines: the added tokens, characters outside the
// vocabulary (curly quotes, accents, emoji, tab → <unk>), whitespace, the empty text.
const TINYSTORIES_CASES = [
  '', 'a', ' ', 'Hello world', 'Once upon a time', 'Once upon a time, there was a little girl.',
  '<|start_story|>Once upon a time', 'Hi <|end_story|>', 'x<|end_story|> y', '<unk>', ' <unk>',
  '<|end_story|><|end_story|>', 'café', 'naïve', '😀😀x', 'é é', 'tab\tx',
  '\u201cHello,\u201d she said. It\u2019s fun!', 'In 1999 there were 42 cats.', 'a  b', ' lead',
  'trail ', '   ', 'line one\nline two', '\n',
];
// The synthetic tests/data/hf_tiny tokenizer: byte fallback with only some byte tokens, no
// unk fusing, repeated pairs ("aaa").
const TINY_CASES = [
  '', 'the abc', 'aaa', 'aaaa', 'é', 'ï', 'ïé', 'éï', 'xy z', 'the\n', ' the  the ', '<s>a',
];

function fnv1a64(ids) {
  let h = 0xcbf29ce484222325n;
  for (const id of ids) {
    for (let k = 0; k < 4; ++k) {
      h ^= BigInt((id >>> (8 * k)) & 0xff);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  }
  return '0x' + h.toString(16).padStart(16, '0');
}

async function cases(tok, texts, bos, eos) {
  const out = [];
  for (const text of texts) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    // nanoserve's decode drops BOS/EOS (the Tokenizer interface), so compare with the library
    // decoding the same ids without them.
    const decoded = await tok.decode(ids.filter((i) => i !== bos && i !== eos), false);
    out.push({ text, ids: Array.from(ids), decoded });
  }
  return out;
}

async function main(dataDir) {
  const ts = Tokenizer.fromFile(path.join(dataDir, 'tinystories-656k/tokenizer.json'));
  const tiny = Tokenizer.fromFile(path.join(__dirname, 'hf_tiny/tokenizer.json'));
  const sample = fs.readFileSync(path.join(dataDir, 'tinystories_valid_sample.txt'), 'utf8');
  const docs = sample.split(SEPARATOR);
  const firstLines = docs.slice(0, 4).flatMap((d) => d.split('\n')).filter((l) => l).slice(0, 10);
  const sampleIds = [];
  for (const d of docs) sampleIds.push(...(await ts.encode(d, null, { addSpecialTokens: false })).getIds());
  const version = require('tokenizers/package.json').version;
  const result = {
    description: 'Hugging Face tokenizers encodings (add_special_tokens=false) and decodings (BOS/EOS ' +
                 'ids removed) for tinystories-656k/tokenizer.json and the synthetic hf_tiny/tokenizer.json',
    generated_by: 'NODE_PATH=/tmp/hftok/node_modules node tests/data/make_hf_reference.js ../shared/data',
    library: `tokenizers ${version} (npm; Node binding of huggingface/tokenizers), node ${process.version}`,
    sample: {
      file: 'tinystories_valid_sample.txt', separator: SEPARATOR, documents: docs.length,
      tokens: sampleIds.length, fnv1a64_of_ids: fnv1a64(sampleIds),
      hash: 'FNV-1a 64 over the concatenated ids of all documents, each id as 4 bytes little-endian',
    },
    tinystories656k: await cases(ts, firstLines.concat(TINYSTORIES_CASES), 1, 2),
    hf_tiny: await cases(tiny, TINY_CASES, 1, 2),
  };
  // One case per line keeps the fixture readable.
  let text = JSON.stringify({ ...result, tinystories656k: 0, hf_tiny: 0 }, null, 1);
  for (const key of ['tinystories656k', 'hf_tiny']) {
    const body = result[key].map((c) => '  ' + JSON.stringify(c)).join(',\n');
    text = text.replace(`"${key}": 0`, `"${key}": [\n${body}\n ]`);
  }
  process.stdout.write(text + '\n');
}

main(process.argv[2] || '../shared/data').catch((e) => { console.error(e); process.exit(1); });
