#!/usr/bin/env node
// Builds one small tokenizer.json per pre-tokenizer family (SmolLM2/GPT-2, Llama 3, Qwen2,
// TinyLlama's SentencePiece-as-BPE) and records the ids and decodings the official Hugging Face
// `tokenizers` library (npm `tokenizers`, the Node binding of the Rust crate; pinned in
// peers/package-lock.json) produces for a TinyStories slice and an adversarial set.
//
// The JS binding cannot configure the BPE trainer or build a regex Split, so the vocabularies
// are trained here by a plain BPE counter and the JSON fields are written out; loading the file
// back with the library is what makes the ids a reference (docs: tests/data/tokenizers/README.md).
//
//   (cd peers && npm ci)
//   node scripts/make_tokenizer_fixtures.mjs /work/shared/data tests/data/tokenizers
//   node scripts/make_tokenizer_fixtures.mjs --random 300 --seed 7 /work/shared/data OUT   # peer test
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../peers/package.json', import.meta.url));
const { Tokenizer } = require('tokenizers');
const LIB_VERSION = require('tokenizers/package.json').version;

const GPT2_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const SEPARATOR = '\n<|endoftext|>\n';
const TRAIN_BYTES = 60000;   // the sample's first 60 KB train the vocabularies
const N_MERGES = 600;        // merges per vocabulary (each tokenizer.json stays < 60 KB)
const N_DOCUMENTS = 12;      // documents of the sample recorded as cases

// Texts each family is checked on. `hex` marks raw bytes (invalid UTF-8): the library sees
// them through a WHATWG UTF-8 decoder (one U+FFFD per maximal ill-formed subpart), as would
// any caller holding a JS or Python string; nanoserve replaces them the same way.
const ADVERSARIAL = [
  '', ' ', 'a', 'Hello world', 'In 1999 there were 42 cats and 1234567 dogs.', '3.14159 + 2,718',
  '0123456789', '٣٤٥ ① Ⅻ', 'a  b', '   ', ' lead', 'trail ', 'tab\there', '\t\t x',
  'line one\nline two', '\n', '\n\n\n', 'a\r\nb', ' \n \n', 'x   \n  y',
  "I'm sure you'll see it's John's. They've said we'd go. DON'T", "It’s “quoted”",
  '日本語のテキスト', '中文文本，标点。', '한국어', 'Привет, мир', 'café naïve', 'cafe\u0301',
  'Å vs A\u030a', 'ﬁ ligature', '😀😀x 👍🏽 👨‍👩‍👧', '🙂', 'zero\u200bwidth', 'nbsp\u00a0here',
  '<|endoftext|>', 'x<|endoftext|>y', 'Hi <|im_start|>user\nhello<|im_end|>\n',
  '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe nice.<|eot_id|>',
  '<s>Hello</s>', 'a<s> b </s>c', '<unk>', '<|im_start|><|im_start|>', '<|endoftext',
  '!!!???...', '((()))[]{}', 'snake_case_name = f(x) // comment', 'http://example.com/a?b=1',
  '    indented code\n        more', 'MiXeD CaSe WORDS', 'ALLCAPS', "''''", "'s 's",
  { hex: 'ff' }, { hex: 'c328' }, { hex: 'e282' }, { hex: '61e28278' }, { hex: 'eda080' },
  { hex: 'f0908080' }, { hex: 'f4908080' }, { hex: 'c0af' }, { hex: '80bf' }, { hex: '48656c6c6ffe21' },
];

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the others to U+0100….
function bytesToUnicode() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; ++b) bs.push(b);
  for (let b = 0xa1; b <= 0xac; ++b) bs.push(b);
  for (let b = 0xae; b <= 0xff; ++b) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); ++n; }
  }
  const map = new Array(256);
  bs.forEach((b, i) => { map[b] = String.fromCodePoint(cs[i]); });
  return map;
}
const BYTE_CHARS = bytesToUnicode();

// Plain BPE training: count adjacent pairs over word frequencies, merge the most frequent
// (ties: the lexicographically smallest pair, so the result is deterministic), repeat.
function trainBpe(wordCounts, nMerges) {
  const words = [...wordCounts.entries()].map(([w, c]) => ({ syms: w, count: c }));
  const merges = [];
  for (let m = 0; m < nMerges; ++m) {
    const pairs = new Map();
    for (const { syms, count } of words) {
      for (let i = 0; i + 1 < syms.length; ++i) {
        const key = syms[i] + '\u0000' + syms[i + 1];
        pairs.set(key, (pairs.get(key) || 0) + count);
      }
    }
    let best = null, bestCount = 1;
    for (const [key, c] of pairs) {
      if (c > bestCount || (c === bestCount && best !== null && key < best)) { best = key; bestCount = c; }
    }
    if (best === null) break;
    const [l, r] = best.split('\u0000');
    merges.push([l, r]);
    for (const w of words) {
      const out = [];
      for (let i = 0; i < w.syms.length; ++i) {
        if (i + 1 < w.syms.length && w.syms[i] === l && w.syms[i + 1] === r) { out.push(l + r); ++i; }
        else out.push(w.syms[i]);
      }
      w.syms = out;
    }
  }
  return merges;
}

function countWords(texts, split) {
  const counts = new Map();
  for (const t of texts) for (const w of split(t)) {
    const key = JSON.stringify(w);
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return new Map([...counts.entries()].map(([k, c]) => [JSON.parse(k), c]));
}

function addedToken(id, content, normalized = false) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized, special: true };
}

// A byte-level BPE vocabulary: the 256 byte characters, then one token per merge.
function byteLevelTokenizer(train, { normalizer, preTokenizer, specials, specialsFirst, ignoreMerges }) {
  const gpt2 = new RegExp(GPT2_PATTERN, 'gu');
  const toChars = (s) => [...Buffer.from(s, 'utf8')].map((b) => BYTE_CHARS[b]);
  const wordCounts = countWords([train],
                                (t) => (t.match(gpt2) || []).map(toChars));
  const merges = trainBpe(wordCounts, N_MERGES);
  const vocab = {};
  let next = 0;
  const added = [];
  if (specialsFirst) for (const s of specials) { added.push(addedToken(next, s)); vocab[s] = next++; }
  for (const c of [...BYTE_CHARS].sort()) vocab[c] = next++;
  for (const [l, r] of merges) if (!(l + r in vocab)) vocab[l + r] = next++;
  // Llama 3 and Qwen2 keep their specials out of model.vocab, at the ids after it.
  if (!specialsFirst) for (const s of specials) added.push(addedToken(next++, s));
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: normalizer || null,
    pre_tokenizer: preTokenizer,
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: !!ignoreMerges,
      vocab, merges: merges.map(([l, r]) => [l, r]),
    },
  };
}

function byteLevel(useRegex) {
  return { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: useRegex };
}
function split(pattern) {
  return { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false };
}

// TinyLlama's tokenizer.json: SentencePiece BPE written as HF BPE with byte fallback, the
// "▁" normalizer and no pre-tokenizer; characters outside the vocabulary become <0xHH>.
function sentencePieceTokenizer(train) {
  const norm = ('▁' + train.replaceAll(' ', '▁'));
  const words = norm.split(/(?=▁)/u).filter((w) => w);
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
  const chars = new Map();
  for (const ch of norm) chars.set(ch, (chars.get(ch) || 0) + 1);
  const alphabet = [...chars.entries()].filter(([, c]) => c >= 3).map(([ch]) => ch).sort();
  const known = new Set(alphabet);
  const wordCounts = new Map();
  for (const [w, c] of counts) if ([...w].every((ch) => known.has(ch))) wordCounts.set([...w], c);
  const merges = trainBpe(wordCounts, N_MERGES);
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  let next = 3;
  for (let b = 0; b < 256; ++b) vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = next++;
  for (const ch of alphabet) if (!(ch in vocab)) vocab[ch] = next++;
  for (const [l, r] of merges) if (!(l + r in vocab)) vocab[l + r] = next++;
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [addedToken(0, '<unk>'), addedToken(1, '<s>'), addedToken(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
             { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: { type: 'Sequence', decoders: [
      { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' },
      { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: {
      type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
      vocab, merges: merges.map(([l, r]) => [l, r]),
    },
  };
}

// The same SentencePiece vocabulary as newer transformers writes it (`legacy: false`): no
// normalizer, a Metaspace pre-tokenizer. `first` puts "▁" only before the start of the text
// (not after a special token); `always` before every segment, and split: true makes each "▁"
// start a word, decoded by the Metaspace decoder.
function metaspaceTokenizer(train, { prependScheme, split, metaspaceDecoder }) {
  const t = sentencePieceTokenizer(train);
  const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: prependScheme, split };
  t.normalizer = null;
  t.pre_tokenizer = metaspace;
  if (metaspaceDecoder) t.decoder = metaspace;
  return t;
}

const FAMILIES = {
  smollm2: {
    build: (t) => byteLevelTokenizer(t, {
      preTokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Digits', individual_digits: true }, byteLevel(true)] },
      specials: ['<|endoftext|>', '<|im_start|>', '<|im_end|>'], specialsFirst: true }),
    config: { bos_token: '<|im_start|>', eos_token: '<|im_end|>' },
  },
  llama3: {
    build: (t) => byteLevelTokenizer(t, {
      preTokenizer: { type: 'Sequence', pretokenizers: [split(LLAMA3_PATTERN), byteLevel(false)] },
      specials: ['<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>',
                 '<|end_header_id|>', '<|eot_id|>'], ignoreMerges: true }),
    config: { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' },
  },
  qwen2: {
    build: (t) => byteLevelTokenizer(t, {
      normalizer: { type: 'NFC' },
      preTokenizer: { type: 'Sequence', pretokenizers: [split(QWEN2_PATTERN), byteLevel(false)] },
      specials: ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] }),
    config: { bos_token: null, eos_token: '<|im_end|>' },
  },
  gpt2: {
    build: (t) => byteLevelTokenizer(t, {
      preTokenizer: byteLevel(true), specials: ['<|endoftext|>'] }),
    config: { bos_token: '<|endoftext|>', eos_token: '<|endoftext|>' },
  },
  tinyllama: {
    build: sentencePieceTokenizer,
    config: { bos_token: '<s>', eos_token: '</s>' },
  },
  metaspace_first: {
    build: (t) => metaspaceTokenizer(t, { prependScheme: 'first', split: false }),
    config: { bos_token: '<s>', eos_token: '</s>' },
  },
  metaspace_split: {
    build: (t) => metaspaceTokenizer(t, { prependScheme: 'always', split: true, metaspaceDecoder: true }),
    config: { bos_token: '<s>', eos_token: '</s>' },
  },
};

// A seeded generator of texts drawn from the characters that stress pre-tokenizers.
function randomTexts(n, seed) {
  let s = BigInt(seed) | 1n;
  const next = () => { s ^= s << 13n; s ^= s >> 7n; s ^= s << 17n; s &= 0xffffffffffffffffn; return Number(s % 1000003n); };
  const atoms = ['a', 'Z', 'é', 'e\u0301', '日', '😀', ' ', '  ', '\n', '\t', '\r\n', '1', '42', '٣',
                 "'s", "'LL", '.', '!?', '<|im_end|>', '<s>', '<|endoftext|>', 'the', ' cat', '_', '\u00a0'];
  const out = [];
  for (let i = 0; i < n; ++i) {
    let t = '';
    const len = next() % 12;
    for (let k = 0; k < len; ++k) t += atoms[next() % atoms.length];
    out.push(t);
  }
  return out;
}

async function record(tok, input) {
  const text = typeof input === 'string' ? input
    : new TextDecoder('utf-8').decode(Buffer.from(input.hex, 'hex'));
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  const ids = Array.from(enc.getIds());
  const decoded = await tok.decode(ids, false);
  return typeof input === 'string' ? { text, ids, decoded } : { hex: input.hex, ids, decoded };
}

async function main() {
  const args = process.argv.slice(2);
  let random = 0, seed = 1;
  while (args[0]?.startsWith('--')) {
    const flag = args.shift();
    if (flag === '--random') random = Number(args.shift());
    else if (flag === '--seed') seed = Number(args.shift());
    else throw new Error(`unknown flag ${flag}`);
  }
  const [dataDir, outDir] = args;
  if (!dataDir || !outDir) throw new Error('usage: make_tokenizer_fixtures.mjs [--random N --seed S] DATA_DIR OUT_DIR');
  const sample = random ? '' : fs.readFileSync(path.join(dataDir, 'tinystories_valid_sample.txt'), 'utf8');
  const train = sample.slice(0, TRAIN_BYTES);
  const docs = sample.split(SEPARATOR).slice(0, N_DOCUMENTS);
  for (const [name, fam] of Object.entries(FAMILIES)) {
    const dir = path.join(outDir, name);
    fs.mkdirSync(dir, { recursive: true });
    // --random reuses the committed vocabularies: the peer test checks them, it does not retrain.
    const tokPath = random
      ? new URL(`../tests/data/tokenizers/${name}/tokenizer.json`, import.meta.url).pathname
      : path.join(dir, 'tokenizer.json');
    if (!random) {
      fs.writeFileSync(tokPath, JSON.stringify(fam.build(train)) + '\n');
      fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(fam.config, null, 1) + '\n');
    }
    const tok = Tokenizer.fromFile(tokPath);
    const inputs = random ? randomTexts(random, seed) : docs.concat(ADVERSARIAL);
    const cases = [];
    for (const input of inputs) cases.push(await record(tok, input));
    const header = {
      family: name,
      library: `tokenizers ${LIB_VERSION} (npm), node ${process.version}`,
      generated_by: 'node scripts/make_tokenizer_fixtures.mjs ' + process.argv.slice(2).join(' '),
      encode: 'add_special_tokens=false', decode: 'skip_special_tokens=false',
    };
    const body = cases.map((c) => ' ' + JSON.stringify(c)).join(',\n');
    fs.writeFileSync(path.join(dir, random ? 'random_cases.json' : 'cases.json'),
                     JSON.stringify(header).slice(0, -1) + ',"cases":[\n' + body + '\n]}\n');
  }
}

main().catch((e) => { console.error(e.stack || e); process.exit(1); });
