#!/usr/bin/env python3
"""Plots for the tutorials, made from the JSON results the programs write (--json).

    python3 scripts/plot_results.py docs/results/ch01_sim.json [more.json ...]
        [--out docs/images] [--tables docs/results]

One script for every chapter (DESIGN.md, "Results"): each JSON report names its program, and a
plotter registered for that program below turns its records into PNG files named
<chapter>_<what>.png and, where the tutorial quotes one, a markdown results table. Every plot says which device produced the numbers; timings from the CPU
simulator are labelled as such, never as GPU performance.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402


def device_label(report):
    """'CPU-simulator timings (…)' or 'GPU: <name>' for titles and captions."""
    if report.get("backend") == "sim":
        return "CPU-simulator timings, not GPU performance"
    return "measured on " + report.get("device", "?")


def records(report, table):
    return [r for r in report.get("records", []) if r.get("table") == table]


def save(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote", path)


# ------------------------------------------------------------------------------------------------
# chapter 1


def plot_ch01(report, out_dir, tables_dir):
    model = next((r["model"] for r in records(report, "generation")), "?")
    model = os.path.basename(model)

    latency = records(report, "latency")
    if latency:
        fig, ax = plt.subplots(figsize=(7, 4))
        for mode, style in (("no-cache", "-o"), ("naive-cache", "-s")):
            rows = [r for r in latency if r["mode"] == mode and r["step"] > 0]  # decode steps
            if rows:
                ax.plot([r["position"] for r in rows], [r["ms"] for r in rows], style,
                        markersize=2, linewidth=1, label=mode)
        ax.set_xlabel("position of the token being computed")
        ax.set_ylabel(f"ms per decode step ({report.get('step_clock', 'wall time')})")
        ax.set_title(f"ch01: per-step latency, {model}\n({device_label(report)})", fontsize=10)
        ax.legend()
        ax.grid(alpha=0.3)
        save(fig, out_dir, "ch01_step_latency.png")

    summary = records(report, "utilization_summary")
    if summary:
        s = summary[0]
        fig, ax = plt.subplots(figsize=(7, 4))
        steps = range(len(s["reserved_over_time"]))
        kib = lambda v: [x / 1024 for x in v]  # noqa: E731
        ax.fill_between(steps, kib(s["reserved_over_time"]), step="post", alpha=0.25,
                        label="reserved (max_seq_len per request)")
        ax.fill_between(steps, kib(s["used_over_time"]), step="post", alpha=0.7,
                        label="used (positions holding K and V)")
        ax.set_xlabel("decode step of the batch")
        ax.set_ylabel("KV cache, KiB")
        ax.set_title(f"ch01: naive KV cache, {len(records(report, 'utilization'))} requests, "
                     f"max_seq_len {s['max_seq_len']} ({model})\n"
                     f"utilization {100 * s['at_completion']:.1f}% at completion, "
                     f"{100 * s['time_average']:.1f}% averaged over time", fontsize=10)
        ax.legend()
        ax.grid(alpha=0.3)
        save(fig, out_dir, "ch01_kv_utilization.png")

    table = os.path.join(tables_dir, f"ch01_{report.get('backend', 'unknown')}_table.md")
    with open(table, "w") as f:
        f.write(ch01_results_table(report))
    print("wrote", table)


def ch01_results_table(report):
    """The tutorial's results table (markdown) from the same records as the plots."""
    latency = records(report, "latency")
    lines = ["| mode | prefill ms | decode ms/step, first 10 | decode ms/step, last 10 | "
             "decode tok/s | token rows computed |",
             "|---|---:|---:|---:|---:|---:|"]
    for mode in ("no-cache", "naive-cache"):
        rows = sorted((r for r in latency if r["mode"] == mode), key=lambda r: r["step"])
        if not rows:
            continue
        decode = [r["ms"] for r in rows[1:]]
        mean = lambda v: sum(v) / len(v) if v else 0.0  # noqa: E731
        lines.append(f"| {mode} | {rows[0]['ms']:.1f} | {mean(decode[:10]):.1f} | "
                     f"{mean(decode[-10:]):.1f} | {1e3 * len(decode) / sum(decode):.1f} | "
                     f"{sum(r['rows'] for r in rows):,} |" if decode else f"| {mode} | {rows[0]['ms']:.1f} | | | | |")
    s = records(report, "utilization_summary")
    if s:
        s = s[0]
        lines += ["", "| KV of the 8-request batch | reserved | used | utilization |",
                  "|---|---:|---:|---:|",
                  f"| each request at completion | {s['reserved_bytes'] / 1024:,.0f} KiB | "
                  f"{s['used_bytes'] / 1024:,.0f} KiB | {100 * s['at_completion']:.1f}% |",
                  f"| averaged over the batch's {len(s['used_over_time'])} steps | | | "
                  f"{100 * s['time_average']:.1f}% |"]
    lines += ["", f"Device: {report.get('device', '?')} ({device_label(report)}); times are "
              f"{report.get('step_clock', 'wall time')}; git {report.get('git_sha', '?')}, "
              f"{report.get('date', '?')}."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# chapter 6


def plot_ch06(report, out_dir, tables_dir):
    """α and measured-vs-predicted speedup against γ, per draft, from the kernel rows."""
    sweep = [r for r in records(report, "sweep") if r.get("path") == "kernels"]
    model = report.get("model", "?")
    for case in sorted({r["case"] for r in sweep}):
        rows = [r for r in sweep if r["case"] == case]
        drafts = list(dict.fromkeys(r["draft"] for r in rows))
        fig, (ax_a, ax_s) = plt.subplots(1, 2, figsize=(11, 4.2))
        for d in drafts:
            rs = sorted((r for r in rows if r["draft"] == d), key=lambda r: r["gamma"])
            g = [r["gamma"] for r in rs]
            ax_a.plot(g, [r["alpha"] for r in rs], marker="o", label=d)
            line, = ax_s.plot(g, [r["measured_speedup"] for r in rs], marker="o", label=d)
            ax_s.plot(g, [r["predicted_at_bytes"] for r in rs], linestyle=":",
                      color=line.get_color())
        ax_a.set_xlabel("γ (draft tokens per round)")
        ax_a.set_ylabel("acceptance rate α")
        ax_a.set_ylim(0, 1.05)
        ax_a.set_title(f"α, {case} ({model})", fontsize=10)
        ax_s.axhline(1.0, color="grey", linewidth=0.8)
        ax_s.set_xlabel("γ")
        ax_s.set_ylabel("speedup over plain decoding")
        ax_s.set_title(f"solid: measured ({device_label(report)})\n"
                       "dotted: predicted with c = weight-bytes ratio", fontsize=9)
        ax_a.legend(fontsize=7)
        save(fig, out_dir, f"ch06_{case.replace('=', '').replace('.', '')}.png")

    table = os.path.join(tables_dir, f"ch06_{report.get('backend', 'unknown')}_table.md")
    with open(table, "w") as f:
        f.write(ch06_results_table(report))
    print("wrote", table)


def ch06_results_table(report):
    """The tutorial's table: every kernel row (sweep, then the warning cases)."""
    head = ["| case | draft | γ | α | tokens/forward | c (measured) | verify cost | speedup "
            "measured | predicted (c) | predicted (verify cost) | predicted (c = bytes) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines = list(head)
    for table in ("sweep", "warning"):
        rows = [r for r in records(report, table) if r.get("path") == "kernels"]
        for r in rows:
            lines.append(f"| {r['case']} | {r['draft']} | {r['gamma']} | {r['alpha']:.2f} | "
                         f"{r['tokens_per_forward']:.2f} | {r['c']:.2f} | {r['verify_cost']:.2f} | "
                         f"{r['measured_speedup']:.2f} | {r['predicted_speedup']:.2f} | "
                         f"{r['predicted_with_verify']:.2f} | {r['predicted_at_bytes']:.2f} |")
    lines += ["", f"Through the kernels on {report.get('device', '?')} ({device_label(report)}); "
              f"prompts: {report.get('prompts', '?')}; git {report.get('git_sha', '?')}, "
              f"{report.get('date', '?')}."]
    return "\n".join(lines) + "\n"


PLOTTERS = {
    "ch01_naive_kv_cache": plot_ch01,
    "ch06_speculative_decoding": plot_ch06,
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
        plotter = PLOTTERS.get(report.get("program"))
        if plotter is None:
            sys.exit(f"{path}: no plotter for program '{report.get('program')}'")
        plotter(report, args.out, args.tables)


if __name__ == "__main__":
    main()
