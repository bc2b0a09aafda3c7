#!/usr/bin/env python3
"""The vendor reference of bench_kernels' attention_prefill suite (issue 21: prefill attention
>= 40% of PyTorch SDPA): torch.nn.functional.scaled_dot_product_attention, causal, on the same
shapes and dtypes, timed the way bench_kernels times a kernel.

    python3 scripts/sdpa_bench.py --json out.json

Shapes: one sequence of T = 128, 512, 2048 tokens, 32 query heads and 8 KV heads of 128
(Llama-3-8B), fp16 and bf16; rows carry bench_kernels' shape strings ("T512 h32/8x128") so the
two JSON files join on (dtype, shape). FLOPs are the causal ones, as in bench_kernels: query t
attends to t + 1 keys, 4 * head_dim per key and head. Timing: CUDA events around one call, L2
flushed before each (a 256 MiB memset outside the events), median of --reps after --warmup.
GQA: enable_gqa=True where torch has it (2.5+), else K and V repeated to 32 heads beforehand
(outside the timing; noted in the record). Needs torch with CUDA (the GPU machine has it);
exits 2 without.
"""
import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="128,512,2048")
    ap.add_argument("--heads", default="32/8x128", help="query heads / KV heads x head_dim")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"sdpa_bench: {e}; the reference needs torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("sdpa_bench: no CUDA device", file=sys.stderr)
        return 2
    heads, head_dim = args.heads.split("x")
    n_heads, n_kv_heads = (int(h) for h in heads.split("/"))
    head_dim = int(head_dim)
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    records = []
    for name in args.dtypes.split(","):
        for t in (int(x) for x in args.lengths.split(",")):
            g = torch.Generator(device="cuda").manual_seed(t)
            def rand(h):  # (batch 1, heads, T, head_dim), values in [-0.5, 0.5)
                return torch.rand(1, h, t, head_dim, device="cuda", dtype=dtypes[name],
                                  generator=g) - 0.5
            q, k, v = rand(n_heads), rand(n_kv_heads), rand(n_kv_heads)
            try:
                F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                gqa = "enable_gqa"
                call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                              enable_gqa=True)
            except TypeError:  # torch < 2.5: repeat the KV heads once, outside the timing
                rep = n_heads // n_kv_heads
                k_r, v_r = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
                gqa = "repeat_interleave"
                call = lambda: F.scaled_dot_product_attention(q, k_r, v_r, is_causal=True)
            for _ in range(args.warmup):
                call()
            times = []
            for _ in range(args.reps):
                flush.zero_()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            ms = statistics.median(times)
            flops = 4.0 * (t * (t + 1) / 2) * n_heads * head_dim
            nbytes = (2 * t * n_heads * head_dim + 2 * t * n_kv_heads * head_dim) * q.element_size()
            shape = f"T{t} h{n_heads}/{n_kv_heads}x{head_dim}"
            print(f"torch_sdpa {name} {shape}: {ms:.4f} ms  {flops / ms / 1e6:.1f} GFLOP/s "
                  f"({gqa})")
            records.append({"kernel": "attention_prefill", "version": "torch_sdpa", "dtype": name,
                            "shape": shape, "ms": ms, "min_ms": min(times),
                            "gflops": flops / ms / 1e6, "gbps": nbytes / ms / 1e6, "gqa": gqa})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"program": "sdpa_bench", "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "cuda": torch.version.cuda,
                       "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
