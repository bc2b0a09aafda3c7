#!/usr/bin/env python3
"""The peer comparison of issue 9: Hugging Face transformers' decode throughput on the same GPU,
with a randomly initialised LlamaForCausalLM of a synthetic model's shape and dtype, so that
bench_decode's tokens/s has a reference measured in the same run.

    python3 scripts/hf_peer_bench.py --shape llama2-7b --dtype fp16 --batch 1,32 --json out.json

Timing: generate() with a fixed number of new tokens (min_new_tokens = max_new_tokens, so EOS
cannot end it early), greedy, KV cache on, after one warm-up call; decode tokens/s excludes the
prefill by subtracting a 1-token generate() of the same prompt. Needs torch and transformers
(the GPU machine has PyTorch; transformers may be missing — the script then says so and exits 2).
"""
import argparse
import json
import sys
import time

# The shapes of common/loaders/synthetic_model.cpp (dim, hidden, layers, heads, kv heads, vocab,
# context, rope theta).
SHAPES = {
    "tiny": (64, 176, 4, 8, 4, 512, 256, 1e4),
    "llama2-7b": (4096, 11008, 32, 32, 32, 32000, 4096, 1e4),
    "llama2-13b": (5120, 13824, 40, 40, 40, 32000, 4096, 1e4),
    "llama3-8b": (4096, 14336, 32, 32, 8, 128256, 8192, 5e5),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="llama2-7b", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16", "fp32"])
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--context", type=int, default=512, help="prompt tokens per sequence")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:  # the device machine has no package registry
        print(f"hf_peer_bench: {e}; the peer comparison needs torch and transformers", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("hf_peer_bench: no CUDA device", file=sys.stderr)
        return 2
    dim, hidden, layers, heads, kv_heads, vocab, ctx, theta = SHAPES[args.shape]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    config = LlamaConfig(hidden_size=dim, intermediate_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         vocab_size=vocab, max_position_embeddings=ctx, rope_theta=theta,
                         rms_norm_eps=1e-5, tie_word_embeddings=False)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(dtype).eval()
    records = []
    for batch in [int(b) for b in args.batch.split(",")]:
        prompt = torch.randint(0, vocab, (batch, args.context), device="cuda")

        def gen(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.no_grad():
                model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                               use_cache=True, pad_token_id=0)
            torch.cuda.synchronize()
            return time.perf_counter() - t0

        gen(2)  # warm-up
        prefill = min(gen(1) for _ in range(2))
        total = gen(args.new_tokens)
        decode_s = max(total - prefill, 1e-9)
        tps = batch * (args.new_tokens - 1) / decode_s
        print(f"HF transformers {args.shape} {args.dtype} batch {batch}: {tps:.1f} decode tokens/s")
        records.append({"batch": batch, "context": args.context, "new_tokens": args.new_tokens,
                        "decode_seconds": decode_s, "tokens_per_s": tps})
    if args.json:
        import transformers
        with open(args.json, "w") as f:
            json.dump({"program": "hf_peer_bench", "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "transformers": transformers.__version__,
                       "shape": args.shape, "dtype": args.dtype, "records": records}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
