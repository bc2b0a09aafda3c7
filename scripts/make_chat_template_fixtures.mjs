#!/usr/bin/env node
// Renders each chat template of tests/data/chat_templates/ with `@huggingface/jinja` (the
// renderer transformers.js uses; pinned in peers/package-lock.json) on a set of conversations,
// with add_generation_prompt true and false, and writes the outputs (or the error a template
// raises) to tests/data/chat_templates/cases.json. tests/common/test_chat_template.cpp checks
// nanoserve's renderer produces exactly these.
//
//   (cd peers && npm ci)
//   node scripts/make_chat_template_fixtures.mjs tests/data/chat_templates
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../peers/package.json', import.meta.url));
const { Template } = await import(require.resolve('@huggingface/jinja'));
const VERSION = JSON.parse(fs.readFileSync(new URL('../peers/node_modules/@huggingface/jinja/package.json', import.meta.url), 'utf8')).version;

// The special tokens each family's tokenizer_config.json names.
const FAMILIES = {
  llama3: { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' },
  'qwen2.5': { bos_token: null, eos_token: '<|im_end|>' },
  smollm2: { bos_token: '<|im_start|>', eos_token: '<|im_end|>' },
  tinyllama: { bos_token: '<s>', eos_token: '</s>' },
  mistral: { bos_token: '<s>', eos_token: '</s>' },
};

const sys = (content) => ({ role: 'system', content });
const user = (content) => ({ role: 'user', content });
const bot = (content) => ({ role: 'assistant', content });
const CONVERSATIONS = [
  [user('Hello!')],
  [sys('You are a pirate.'), user('Who are you?')],
  [user('Tell me a story.'), bot('Once upon a time, there was a cat.'), user('And then?')],
  [sys('Be brief.'), user('Hi'), bot('Hello.'), user('Count to 3'), bot('1, 2, 3')],
  [user('  spaces around  \n'), bot('\n\tok\n')],
  [user('Unicode: 日本語 😀 café, quotes \' " and {{ braces }} {% tags %}')],
  [user('first'), user('second')],
  [sys('only a system message')],
  [user('')],
];

const dir = process.argv[2];
if (!dir) throw new Error('usage: make_chat_template_fixtures.mjs DIR');
const out = { library: `@huggingface/jinja ${VERSION} (npm), node ${process.version}`, families: {} };
for (const [family, specials] of Object.entries(FAMILIES)) {
  const source = fs.readFileSync(path.join(dir, `${family}.jinja`), 'utf8');
  const template = new Template(source);
  const cases = [];
  for (const messages of CONVERSATIONS) {
    for (const add_generation_prompt of [false, true]) {
      const c = { messages, add_generation_prompt };
      try {
        c.output = template.render({ messages, add_generation_prompt, ...specials });
      } catch (e) {
        c.error = String(e.message || e);
      }
      cases.push(c);
    }
  }
  out.families[family] = { ...specials, cases };
}
let text = JSON.stringify(out, null, 1);
fs.writeFileSync(path.join(dir, 'cases.json'), text + '\n');
