// llama_cpp_greedy: greedy generation and next-token probabilities from llama.cpp (through the
// npm package node-llama-cpp, prebuilt CPU build) for the peer tests.
//
//   node peers/llama_cpp_greedy.mjs MODEL.gguf STEPS TOKEN [TOKEN ...]
//
// Prints one JSON object: {"tokens": [the STEPS greedy tokens after the prompt],
// "probs": [for each step, the probability of every vocabulary token, in id order]}. The KV
// cache is F32 and flash attention off, so the arithmetic is plain fp32 (docs: peers.md).
import { getLlama } from "node-llama-cpp";

const [modelPath, stepsArg, ...promptArgs] = process.argv.slice(2);
const steps = Number(stepsArg);
const prompt = promptArgs.map(Number);
const llama = await getLlama({ build: "never", gpu: false, logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({
  contextSize: Math.max(64, prompt.length + steps + 1),
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
  batchSize: 512,
  // One thread: ggml's worker threads spin at each barrier, and with ctest running two tests on
  // a 2-core machine its default thread count made 16 steps of stories260K take 16 s instead
  // of 1 s (same tokens and probabilities, byte for byte).
  threads: 1,
});
const seq = context.getSequence();
const tokens = [];
const probs = [];
let input = prompt;
for (let s = 0; s < steps; ++s) {
  const items = input.map((t, i) =>
    i === input.length - 1
      ? [t, { generateNext: { token: true, probabilities: true,
                              options: { temperature: 0 } } }]
      : t);
  const out = await seq.controlledEvaluate(items);
  const next = out[items.length - 1].next;
  tokens.push(next.token);
  const p = [];
  for (const [tok, pr] of next.probabilities) p[tok] = pr;
  probs.push(Array.from(p, (x) => x ?? 0));
  input = [next.token];
}
console.log(JSON.stringify({ tokens, probs }));
await context.dispose();
await model.dispose();
