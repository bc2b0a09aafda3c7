#!/usr/bin/env python3
"""nanoserve's logits against Hugging Face transformers' on the same small checkpoints.

    python3 scripts/hf_logits_check.py --bin gpu_carry/bin --json out/hf_logits.json
    python3 scripts/hf_logits_check.py --nanoserve N --writer W --without-transformers

`write_hf_checkpoints` (peers/) writes a random checkpoint of each architecture nanoserve loads
(LlamaForCausalLM with Llama 3.1's rope_scaling, Qwen2ForCausalLM with q/k/v biases and tied
embeddings, MistralForCausalLM with an explicit head_dim; sharded bf16 safetensors). For each,
the same token ids go through `nanoserve logits` (the CPU oracle; the kernels in fp32 and bf16)
and through transformers (`AutoModelForCausalLM.from_pretrained(dir, torch_dtype=...)` on CUDA,
eager attention, TF32 off; `model(input_ids).logits`), and every position's full row of logits
is compared: max |d|, max |d| / max |ref|, argmax agreement, and |got - ref| <= atol + rtol |ref|
for the rows with a tolerance. The tolerances are the named ones of common/tolerances.h, read
from that file so that there is one place for them:
  - fp32 (oracle or kernels) vs transformers fp32: kPeerTransformersFp32Logits;
  - kernels bf16 vs transformers fp32: kKernelForwardActBf16 (its own situation: bf16 kernels
    against an fp32 forward on the same bf16 weights);
  - transformers bf16 vs fp32, and kernels bf16 vs transformers bf16: reported, not checked.
With --without-transformers only the oracle is the reference (kernels fp32: kFp32Forward, bf16:
kKernelForwardActBf16): what ctest runs on the simulator, without PyTorch.

Exit status: 0 every checked row within its tolerance, 1 one is not (or a program failed),
3 not run (torch, transformers or a CUDA device missing; argparse already uses 2).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = 3


def read_tolerances(path):
    """{name: (atol, rtol)} of every `inline constexpr Tolerance kX{a, r};` (or `= kY;`)."""
    text = path.read_text()
    tol = {n: (float(a), float(r)) for n, a, r in
           re.findall(r"Tolerance\s+(k\w+)\s*\{\s*([-+.\deE]+)\s*,\s*([-+.\deE]+)\s*\}", text)}
    for name, alias in re.findall(r"Tolerance\s+(k\w+)\s*=\s*(k\w+)\s*;", text):
        tol[name] = tol[alias]
    return tol


def nanoserve_logits(ns, model, tokens, device, dtype, work):
    out = work / f"{Path(model).name}-{device}-{dtype}.json"
    cmd = [ns, "logits", "-m", model, "--tokens", ",".join(map(str, tokens)), "--device", device,
           "--json", str(out)] + (["--dtype", dtype] if device == "gpu" else [])
    subprocess.run(cmd, check=True, timeout=120, stdout=subprocess.DEVNULL)
    return [r["logits"] for r in json.loads(out.read_text())["records"]]


def transformers_logits(torch, auto_model, model_dir, tokens, dtype):
    model = auto_model.from_pretrained(model_dir, torch_dtype=dtype, attn_implementation="eager")
    model = model.to("cuda").eval()
    got = next(model.parameters()).dtype
    if got != dtype:
        raise RuntimeError(f"from_pretrained gave {got} weights, not {dtype}")
    with torch.no_grad():
        logits = model(torch.tensor([tokens], device="cuda")).logits[0]
    return logits.float().cpu().tolist()


def compare(got, ref, tol):
    """max |d|, relative, argmax agreement and (with a tolerance) whether all are within."""
    if len(got) != len(ref) or any(len(g) != len(r) for g, r in zip(got, ref)):
        return {"error": f"shapes differ: {len(got)} rows of {len(got[0]) if got else 0} vs "
                         f"{len(ref)} rows of {len(ref[0]) if ref else 0}", "within": False}
    diff = max(abs(g - r) for gr, rr in zip(got, ref) for g, r in zip(gr, rr))
    scale = max(abs(r) for rr in ref for r in rr)
    agree = sum(max(range(len(g)), key=g.__getitem__) == max(range(len(r)), key=r.__getitem__)
                for g, r in zip(got, ref))
    ok = None
    if tol is not None:
        atol, rtol = tol
        ok = all(abs(g - r) <= atol + rtol * abs(r) for gr, rr in zip(got, ref) for g, r in zip(gr, rr))
    return {"max_abs_diff": diff, "max_rel_diff": diff / scale if scale else math.inf,
            "max_abs_ref": scale, "argmax_agree": agree, "positions": len(ref), "within": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="gpu_carry/bin", help="folder of nanoserve and write_hf_checkpoints")
    ap.add_argument("--nanoserve", help="the nanoserve binary (default: BIN/nanoserve)")
    ap.add_argument("--writer", help="the write_hf_checkpoints binary (default: BIN/...)")
    ap.add_argument("--tokens", type=int, default=24, help="positions per sequence")
    ap.add_argument("--without-transformers", action="store_true",
                    help="compare the kernels with the CPU oracle only (no PyTorch needed)")
    ap.add_argument("--json", default="", help="write the table as JSON here")
    args = ap.parse_args()
    ns = args.nanoserve or str(Path(args.bin) / "nanoserve")
    writer = args.writer or str(Path(args.bin) / "write_hf_checkpoints")
    tols = read_tolerances(ROOT / "common" / "tolerances.h")
    need = ["kFp32Forward", "kKernelForwardActBf16", "kPeerTransformersFp32Logits"]
    if any(n not in tols for n in need):
        print(f"hf_logits_check: {[n for n in need if n not in tols]} not in common/tolerances.h")
        return 1
    fp32_tol = tols["kFp32Forward"] if args.without_transformers else tols["kPeerTransformersFp32Logits"]
    bf16_tol = tols["kKernelForwardActBf16"]

    torch = auto_model = None
    versions = {}
    if not args.without_transformers:
        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM as auto_model
        except ImportError as e:  # the GPU machine has no package registry
            print(f"hf_logits_check: not run: {e.name or e} missing ({e})")
            return NOT_RUN
        if not torch.cuda.is_available():
            print("hf_logits_check: not run: torch sees no CUDA device")
            return NOT_RUN
        torch.set_float32_matmul_precision("highest")  # no TF32: fp32 must mean fp32
        versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                    "gpu": torch.cuda.get_device_name(0)}
        print("hf_logits_check: " + ", ".join(f"{k} {v}" for k, v in versions.items()))

    rows = []
    with tempfile.TemporaryDirectory(prefix="hf_logits_") as tmp:
        work = Path(tmp)
        subprocess.run([writer, str(work / "ckpt")], check=True, timeout=60)
        for arch in ["llama", "qwen2", "mistral"]:
            model = str(work / "ckpt" / arch)
            vocab = json.loads((work / "ckpt" / arch / "config.json").read_text())["vocab_size"]
            tokens = [(37 * i + 5) % vocab for i in range(args.tokens)]
            oracle = nanoserve_logits(ns, model, tokens, "cpu", "fp32", work)
            kern32 = nanoserve_logits(ns, model, tokens, "gpu", "fp32", work)
            kern16 = nanoserve_logits(ns, model, tokens, "gpu", "bf16", work)
            if args.without_transformers:
                pairs = [("kernels fp32 vs oracle", kern32, oracle, fp32_tol, "kFp32Forward"),
                         ("kernels bf16 vs oracle", kern16, oracle, bf16_tol, "kKernelForwardActBf16")]
            else:
                try:
                    hf32 = transformers_logits(torch, auto_model, model, tokens, torch.float32)
                    hf16 = transformers_logits(torch, auto_model, model, tokens, torch.bfloat16)
                except Exception as e:  # e.g. a transformers too old for this architecture
                    rows.append({"checkpoint": arch, "comparison": "transformers failed",
                                 "error": f"{type(e).__name__}: {e}", "within": False})
                    continue
                pairs = [
                    ("oracle vs hf fp32", oracle, hf32, fp32_tol, "kPeerTransformersFp32Logits"),
                    ("kernels fp32 vs hf fp32", kern32, hf32, fp32_tol, "kPeerTransformersFp32Logits"),
                    ("kernels bf16 vs hf fp32", kern16, hf32, bf16_tol, "kKernelForwardActBf16"),
                    ("kernels bf16 vs hf bf16", kern16, hf16, None, ""),
                    ("hf bf16 vs hf fp32", hf16, hf32, None, "")]
            for name, got, ref, tol, tol_name in pairs:
                rows.append({"checkpoint": arch, "comparison": name, "tolerance": tol_name,
                             **compare(got, ref, tol)})

    print(f"{'checkpoint':<10} {'comparison':<24} {'max|d|':>10} {'rel':>10} {'argmax':>7} "
          f"{'tolerance':<28} verdict")
    for r in rows:
        if "error" in r:
            print(f"{r['checkpoint']:<10} {r['comparison']:<24} FAILED: {r['error']}")
            continue
        verdict = {True: "ok", False: "FAILED", None: "(reported)"}[r["within"]]
        print(f"{r['checkpoint']:<10} {r['comparison']:<24} {r['max_abs_diff']:>10.3g} "
              f"{r['max_rel_diff']:>10.3g} {r['argmax_agree']:>3}/{r['positions']:<3} "
              f"{r['tolerance']:<28} {verdict}")
    failed = [r for r in rows if r["within"] is False]
    if args.json:
        report = {"program": "hf_logits_check", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "git_sha": os.environ.get("NANOSERVE_GIT_SHA", "unknown"),
                  "git_dirty": os.environ.get("NANOSERVE_GIT_DIRTY", "unknown"),
                  "reference": "oracle" if args.without_transformers else "transformers",
                  **versions, "tolerances": {n: tols[n] for n in need}, "records": rows}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"hf_logits_check: {len(failed)} of {sum(r['within'] is not None for r in rows)} checked "
          f"rows outside their tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"hf_logits_check: {e}", file=sys.stderr)
        sys.exit(1)
