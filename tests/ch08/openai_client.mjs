// The official `openai` npm client against `nanoserve serve` (issue 16): whatever it sends, the
// server must accept as the OpenAI API does, and answer what the client can read.
//   node openai_client.mjs BASE_URL MODEL      (peers/node_modules must hold openai)
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../peers/package.json", import.meta.url));
const { default: OpenAI } = await import(require.resolve("openai"));
const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 30_000 });

const cases = [];
const test = (name, fn) => cases.push({ name, fn });

async function collect(stream) {
  const texts = {}, finish = {};
  let usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      texts[c.index] = (texts[c.index] ?? "") + (c.text ?? c.delta?.content ?? "");
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  return { texts, finish, usage, chunks };
}

const base = { model, prompt: "Once upon a time", max_tokens: 12, temperature: 0.8, seed: 7 };

test("models.list names the served model", async () => {
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [model]);
});

test("completions: text, usage, finish_reason", async () => {
  const r = await client.completions.create(base);
  assert.equal(r.object, "text_completion");
  assert.equal(typeof r.choices[0].text, "string");
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
});

test("completions: streamed text equals the non-streamed text (same seed), usage last", async () => {
  const full = await client.completions.create(base);
  const s = await collect(await client.completions.create({
    ...base, stream: true, stream_options: { include_usage: true } }));
  assert.equal(s.texts[0], full.choices[0].text);
  assert.equal(s.finish[0], full.choices[0].finish_reason);
  assert.deepEqual(s.usage, full.usage);
});

test("same seed, same text; another seed, usually another", async () => {
  const a = await client.completions.create(base);
  const b = await client.completions.create(base);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test("chat: message and streamed deltas (role first)", async () => {
  const req = { model, messages: [{ role: "user", content: "Tell me a story" }],
                max_completion_tokens: 10, temperature: 0, };
  const r = await client.chat.completions.create(req);
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  const stream = await client.chat.completions.create({ ...req, stream: true });
  let first = null, text = "";
  for await (const chunk of stream) {
    first ??= chunk;
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(first.choices[0].delta.role, "assistant");
  assert.equal(text, r.choices[0].message.content);
});

test("n = 2: two choices, streamed and not", async () => {
  const r = await client.completions.create({ ...base, n: 2 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  const s = await collect(await client.completions.create({ ...base, n: 2, stream: true }));
  assert.equal(s.texts[0], r.choices[0].text);
  assert.equal(s.texts[1], r.choices[1].text);
  // Sample 0 of n has the request's seed: it is the n = 1 answer.
  assert.equal(r.choices[0].text, (await client.completions.create(base)).choices[0].text);
});

test("stop sequence: cut from the text, finish_reason stop, streamed too", async () => {
  const long = { ...base, temperature: 0, max_tokens: 40 };
  const text = (await client.completions.create(long)).choices[0].text;
  // A printable two-character piece from the middle of the greedy text is the stop string.
  let k = 4;
  while (k + 2 < text.length && !/^[\x21-\x7e]{2}$/.test(text.slice(k, k + 2))) k++;
  assert.ok(k + 2 < text.length, `no printable pair in ${JSON.stringify(text)}`);
  const stop = text.slice(k, k + 2);
  const want = text.slice(0, text.indexOf(stop));
  const r = await client.completions.create({ ...long, stop: [stop] });
  assert.equal(r.choices[0].text, want);
  assert.equal(r.choices[0].finish_reason, "stop");
  const s = await collect(await client.completions.create({ ...long, stop, stream: true }));
  assert.equal(s.texts[0], want);
  assert.equal(s.finish[0], "stop");
});

test("logprobs: completions (top 2) and chat (top_logprobs 2)", async () => {
  const r = await client.completions.create({ ...base, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  for (let i = 0; i < lp.tokens.length; i++) {
    assert.ok(lp.token_logprobs[i] <= 0);
    // (A dict by token text: two tokens with one text share a key, as in OpenAI's format.)
    const top = Object.values(lp.top_logprobs[i]);
    assert.ok(top.length >= 1 && top.length <= 2);
  }
  const c = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], max_tokens: 4, temperature: 0,
    logprobs: true, top_logprobs: 2 });
  const content = c.choices[0].logprobs.content;
  assert.equal(content.length, c.usage.completion_tokens);
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 2);
    assert.ok(Array.isArray(e.bytes));
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6);
    assert.ok(e.top_logprobs[1].logprob <= e.logprob);
  }
});

async function expectError(promise, status, check) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.status, status, `${e}`);
    check?.(e);
    return;
  }
  assert.fail(`expected HTTP ${status}`);
}

test("errors: 404 unknown model, 400 naming the field, 400 context length", async () => {
  await expectError(client.completions.create({ ...base, model: "gpt-9" }), 404,
                    (e) => assert.equal(e.code, "model_not_found"));
  await expectError(client.completions.create({ ...base, temperature: 7 }), 400,
                    (e) => assert.equal(e.param, "temperature"));
  await expectError(client.completions.create({ ...base, top_p: 0 }), 400,
                    (e) => assert.equal(e.param, "top_p"));
  await expectError(client.completions.create({ ...base, prompt: "x".repeat(400) }), 400,
                    (e) => { assert.equal(e.code, "context_length_exceeded");
                             assert.match(e.message, /401 tokens/); });
  await expectError(client.chat.completions.create({ model, messages: [] }), 400,
                    (e) => assert.equal(e.param, "messages"));
  await expectError(client.completions.create({ ...base, n: 99 }), 400,
                    (e) => assert.equal(e.param, "n"));
});

let passed = 0, failed = 0;
for (const { name, fn } of cases) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}
console.log(`openai client: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
