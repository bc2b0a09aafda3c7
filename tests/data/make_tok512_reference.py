#!/usr/bin/python3
"""Writes tok512_sentencepiece_reference.json: token ids that SentencePiece itself produces
with tok512.model (the model tok512.bin was exported from), the reference the C++ tests compare
nanoserve's llama2.c-style encoder against.

Run with Debian's Python and packages (apt-get install sentencepiece python3-sentencepiece):
    /usr/bin/python3 tests/data/make_tok512_reference.py ../shared/data \
        > tests/data/tok512_sentencepiece_reference.json
"""
import hashlib
import json
import subprocess
import sys

import sentencepiece as spm

SEPARATOR = "\n<|endoftext|>\n"

# Hand-picked inputs: punctuation, digits, characters in the vocabulary as one piece ("é"),
# characters that need byte fallback ("ï", emoji, CJK, tab), and whitespace that
# SentencePiece normalizes (extra spaces) but llama2.c does not.
EXTRA_CASES = [
    "",
    "a",
    " ",
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    "Hello, world! How are you? I'm fine; thanks: (really) \"quoted\" - dash...",
    "In 1999 there were 42 cats, 7 dogs and 3.14 pies.",
    "café",
    "naïve",
    "😀",
    "I ❤ 🍕!",
    "日本語",
    "x\ty",
    "line one\nline two",
    "\n",
    "supercalifragilisticexpialidocious",
    "a  b",
    " leading space",
    "trailing space ",
    "   ",
    "  two  spaces  ",
    "a \n b",
]


class CompactIdsEncoder(json.JSONEncoder):
    """Writes each case on one line so the fixture stays readable and diffs stay small."""

    def iterencode(self, o, _one_shot=False):
        if isinstance(o, dict) and "cases" in o:
            head = {k: v for k, v in o.items() if k != "cases"}
            cases = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in o["cases"])
            body = json.dumps(head, ensure_ascii=False, indent=1)
            yield body[:-2] + ',\n "cases": [\n  ' + cases + "\n ]\n}"
        else:
            yield from super().iterencode(o, _one_shot)


def fnv1a64(ids):
    h = 0xCBF29CE484222325
    for i in ids:
        for byte in int(i).to_bytes(4, "little"):
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "0x%016x" % h


def main(data_dir):
    model = f"{data_dir}/tok512.model"
    sp = spm.SentencePieceProcessor(model_file=model)
    sample = open(f"{data_dir}/tinystories_valid_sample.txt", encoding="utf-8").read()
    docs = sample.split(SEPARATOR)
    lines = [l for d in docs[:4] for l in d.split("\n") if l][:10]  # the sample's first lines
    texts = lines + EXTRA_CASES
    cases = [{"text": t, "ids": sp.encode(t)} for t in texts]

    # Cross-check with the spm_encode command line on every single-line case.
    single = [c for c in cases if "\n" not in c["text"]]
    out = subprocess.run(["spm_encode", f"--model={model}", "--output_format=id"],
                         input="".join(c["text"] + "\n" for c in single),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    for c, line in zip(single, out):
        assert [int(x) for x in line.split()] == c["ids"], c["text"]

    sample_ids = [i for d in docs for i in sp.encode(d)]
    json.dump({
        "description": "SentencePiece encodings (no BOS/EOS) with tok512.model; tests/common/"
                       "test_tokenizer_llama.cpp compares LlamaTokenizer(tok512.bin) with them",
        "generated_by": "/usr/bin/python3 tests/data/make_tok512_reference.py ../shared/data",
        "sentencepiece": f"python3-sentencepiece {spm.__version__} (Debian bookworm "
                         "0.1.97-3+b1); spm_encode --output_format=id of package sentencepiece "
                         "0.1.97-3+b1 agrees on every single-line case",
        "model": "tok512.model",
        "model_sha256": hashlib.sha256(open(model, "rb").read()).hexdigest(),
        "normalizer": "identity, add_dummy_prefix, remove_extra_whitespaces (from the model)",
        "cases": cases,
        "sample": {
            "file": "tinystories_valid_sample.txt",
            "separator": SEPARATOR,
            "documents": len(docs),
            "tokens": len(sample_ids),
            "fnv1a64_of_ids": fnv1a64(sample_ids),
            "hash": "FNV-1a 64 over the concatenated ids of all documents, each id as 4 bytes "
                    "little-endian",
        },
    }, sys.stdout, ensure_ascii=False, indent=1, cls=CompactIdsEncoder)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
