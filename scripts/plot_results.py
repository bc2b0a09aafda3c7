#!/usr/bin/env python3
"""Plots for the tutorials, made from the JSON results the programs write (--json).

    python3 scripts/plot_results.py docs/results/ch01_sim.json [more.json ...]
        [--out docs/images] [--tables docs/results]

Each JSON report names its program; the plotter of that program (scripts/plots/chNN.py, one
module per chapter) turns its records into PNG files named <chapter>_<what>.png and, where the
tutorial quotes one, a markdown results table. Every plot says which device produced the
numbers; timings from the CPU simulator are labelled as such, never as GPU performance.
"""
import argparse
import importlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# program name -> (module under scripts/plots, its plot function)
PLOTTERS = {
    "ch01_naive_kv_cache": ("ch01", "plot_ch01"),
    "ch02_paged_kv_cache": ("ch02", "plot_ch02"),
    "ch03_static_batching": ("ch03_ch04", "plot_ch03"),
    "ch04_continuous_batching": ("ch03_ch04", "plot_ch04"),
    "ch04_continuous_batching sched-bench": ("ch03_ch04", "plot_ch04"),
    "ch05_quantization": ("ch05", "plot_ch05"),
    "ch06_speculative_decoding": ("ch06", "plot_ch06"),
    "bench_serving": ("ch08", "plot_ch08"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="JSON files written with --json")
    parser.add_argument("--out", default="docs/images", help="directory for the PNG files")
    parser.add_argument("--tables", default="docs/results",
                        help="directory for the markdown results tables the tutorials quote")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.tables, exist_ok=True)
    for path in args.reports:
        with open(path) as f:
            report = json.load(f)
        entry = PLOTTERS.get(report.get("program"))
        if entry is None:
            sys.exit(f"{path}: no plotter for program '{report.get('program')}'")
        module, function = entry
        getattr(importlib.import_module("plots." + module), function)(report, args.out, args.tables)


if __name__ == "__main__":
    main()
