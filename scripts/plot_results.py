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
# chapter 2


def plot_ch02(report, out_dir, tables_dir):
    model = report.get("model", "?")
    util = {r["cache"]: r for r in records(report, "utilization")}
    sweep = sorted(records(report, "block_size_sweep"), key=lambda r: r["block_size"])
    if sweep:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        sizes = [r["block_size"] for r in sweep]
        ax1.plot(sizes, [100 * r["at_completion"] for r in sweep], "-o", label="paged, at completion")
        ax1.plot(sizes, [100 * r["time_average"] for r in sweep], "-s", label="paged, averaged over time")
        if "naive" in util:
            ax1.axhline(100 * util["naive"]["at_completion"], color="gray", linestyle="--",
                        label="naive, at completion")
            ax1.axhline(100 * util["naive"]["time_average"], color="gray", linestyle=":",
                        label="naive, averaged over time")
        ax1.set_xscale("log", base=2)
        ax1.set_xlabel("block size (positions)")
        ax1.set_ylabel("KV utilization, % of reserved bytes")
        ax1.set_ylim(0, 105)
        ax1.legend(fontsize=8)
        ax1.grid(alpha=0.3)
        ax2.plot(sizes, [r["fit_at_once"] for r in sweep], "-o", label="paged")
        if "naive" in util:
            ax2.axhline(util["naive"]["fit_at_once"], color="gray", linestyle="--", label="naive")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("block size (positions)")
        ax2.set_ylabel("requests of the mix held at once")
        ax2.set_ylim(bottom=0)
        ax2.legend(fontsize=8)
        ax2.grid(alpha=0.3)
        s = sweep[0]
        fig.suptitle(f"ch02: chapter 1's 8-request mix, KV budget {s['slots']} x {s['max_seq_len']} "
                     f"positions ({model}; bookkeeping replay, device-independent)", fontsize=10)
        save(fig, out_dir, "ch02_block_size_sweep.png")

    turns = records(report, "multiturn_turn")
    if turns:
        fig, ax = plt.subplots(figsize=(7, 4))
        last = max(t["turn"] for t in turns)
        xs = list(range(1, last + 1))
        width = 0.4
        for k, (caching, label) in enumerate(((False, "prefix caching off"), (True, "prefix caching on"))):
            ys = [sum(t["computed_tokens"] for t in turns
                      if t["prefix_caching"] == caching and t["turn"] == x) for x in xs]
            ax.bar([x + (k - 0.5) * width for x in xs], ys, width, label=label)
        sessions = len({t["session"] for t in turns})
        same = next((r["identical"] for r in records(report, "multiturn_check")), False)
        ax.set_xticks(xs)
        ax.set_xlabel("turn (summed over sessions)")
        ax.set_ylabel("prompt tokens computed")
        ax.set_title(f"ch02: {sessions} chat sessions with a shared system prompt ({model})\n"
                     f"token counts are exact; replies identical in both modes: "
                     f"{'yes' if same else 'NO'}", fontsize=10)
        ax.legend()
        ax.grid(alpha=0.3, axis="y")
        save(fig, out_dir, "ch02_multiturn_prefill.png")

    table = os.path.join(tables_dir, f"ch02_{report.get('backend', 'unknown')}_table.md")
    with open(table, "w") as f:
        f.write(ch02_results_table(report))
    print("wrote", table)


def ch02_results_table(report):
    """The tutorial's results tables (markdown) from the same records as the plots."""
    lines = []
    util = records(report, "utilization")
    if util:
        s = util[0]
        lines += [f"KV utilization, chapter 1's mix in a budget of {s['slots']} x "
                  f"{s['max_seq_len']} positions ({s['capacity_bytes'] / 1024:,.0f} KiB):", "",
                  "| cache | reserved | used | utilization | averaged over time | requests held at once |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in util:
            name = "naive contiguous" if r["cache"] == "naive" else f"paged, block {r['block_size']}"
            lines.append(f"| {name} | {r['reserved_bytes'] / 1024:,.1f} KiB | "
                         f"{r['used_bytes'] / 1024:,.1f} KiB | {100 * r['at_completion']:.1f}% | "
                         f"{100 * r['time_average']:.1f}% | {r['fit_at_once']} |")
    multi = records(report, "multiturn_summary")
    if multi:
        same = next((r["identical"] for r in records(report, "multiturn_check")), None)
        lines += ["", "| chats | prompt tokens computed | from the cache | block hit rate | "
                      "rows through the model | CPU s (simulator) |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in multi:
            mode = "prefix caching on" if r["prefix_caching"] else "prefix caching off"
            lines.append(f"| {mode} | {r['prefill_tokens_computed']:,} | "
                         f"{r['prefill_tokens_skipped']:,} | {100 * r['hit_rate']:.1f}% | "
                         f"{r['rows_computed']:,} | {r['cpu_seconds']:.1f} |")
        lines.append(f"\nReplies identical in both modes: {'yes' if same else 'NO'} "
                     f"({multi[0]['turns']} turns).")
    samp = records(report, "parallel_sampling")
    if samp:
        same = next((r["identical"] for r in records(report, "parallel_sampling_check")), None)
        lines += ["", "| parallel sampling | prompt blocks | peak blocks | block copies | "
                      "prefill rows | CPU s (simulator) |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in samp:
            mode = (f"shared (fork + copy-on-write), n = {r['n']}" if r["shared"]
                    else f"unshared, n = {r['n']}")
            lines.append(f"| {mode} | {r['prompt_blocks']} | {r['peak_blocks']} | "
                         f"{r['block_copies']} | {r['prefill_rows']} | {r['cpu_seconds']:.1f} |")
        lines.append(f"\nSamples identical shared and unshared: {'yes' if same else 'NO'}.")
    lines += ["", f"Model {report.get('model', '?')}; device: {report.get('device', '?')} "
              f"({device_label(report)}); git {report.get('git_sha', '?')}, {report.get('date', '?')}."]
    return "\n".join(lines) + "\n"


PLOTTERS = {
    "ch01_naive_kv_cache": plot_ch01,
    "ch02_paged_kv_cache": plot_ch02,
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
