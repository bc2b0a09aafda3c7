"""Chapter 5: quantization — the Pareto plot and the results table from its --json report."""
import math
import os

import matplotlib.ticker

from plots.common import device_label, plt, records, save  # noqa: F401


CH05_STYLES = {  # method -> (marker, label)
    "fp32": ("s", "fp32 / fp16 (dense)"),
    "fp16": ("s", None),
    "rtn": ("o", "RTN"),
    "gptq": ("^", "GPTQ"),
    "gptq+act": ("v", "GPTQ act-order"),
    "awq": ("D", "AWQ"),
}


def ch05_method(r):
    return "gptq+act" if r["method"] == "gptq" and r.get("act_order") else r["method"]


def pareto_front(points):
    """The points no other point beats on both axes (fewer bits and lower y), sorted by x."""
    front, best = [], float("inf")
    for x, y in sorted(points):
        if y < best:
            front.append((x, y))
            best = y
    return front


def label_points(ax, rows):
    """Names each row's format beside its point (one label per format: the RTN point), moving a
    label down while it would overlap one already placed nearby — formats of nearly equal size
    sit close together."""
    lo, hi = min(r["perplexity"] for r in rows), max(r["perplexity"] for r in rows)
    gap = 0.045 * (hi - lo if hi > lo else 1.0)
    placed = []  # (log2 x, label y)
    for r in sorted(rows, key=lambda r: -r["perplexity"]):
        x, y = math.log2(r["bits_per_weight"]), r["perplexity"]
        while any(abs(x - px) < 0.6 and abs(y - py) < gap for px, py in placed):
            y -= gap
        placed.append((x, y))
        ax.annotate(r["format"].replace("-sym", ""), xy=(r["bits_per_weight"], r["perplexity"]),
                    xytext=(r["bits_per_weight"] * 1.12, y), fontsize=7, va="center",
                    arrowprops=dict(arrowstyle="-", linewidth=0.5, color="grey"))


def plot_ch05(report, out_dir, tables_dir):
    results = records(report, "results")
    models = list(dict.fromkeys(r["model"] for r in results))
    rows_ppl = [r for r in results if r.get("perplexity") is not None]
    if rows_ppl:
        fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 4.6), squeeze=False)
        for ax, model in zip(axes[0], models):
            rows = [r for r in rows_ppl if r["model"] == model]
            for method, (marker, label) in CH05_STYLES.items():
                pts = [r for r in rows if ch05_method(r) == method]
                if not pts:
                    continue
                ax.scatter([r["bits_per_weight"] for r in pts], [r["perplexity"] for r in pts],
                           marker=marker, s=36, label=label, zorder=3,
                           color="black" if method in ("fp32", "fp16") else None)
            label_points(ax, [r for r in rows if ch05_method(r) in ("rtn", "fp32", "fp16")])
            front = pareto_front([(r["bits_per_weight"], r["perplexity"]) for r in rows])
            ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="grey",
                    linewidth=0.8, alpha=0.7, label="Pareto front")
            ax.set_xscale("log", base=2)
            ax.set_xticks([4, 5, 6, 8, 16, 32])
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.set_xlabel("stored bits per linear weight (scales, zeros, g_idx included)")
            ax.set_ylabel("perplexity on the evaluation slice (lower is better)")
            ax.set_title(model, fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"ch05: perplexity vs stored bits per weight\n(the CPU oracle on the "
                     f"dequantized weights; git {report.get('git_sha', '?')})", fontsize=10)
        save(fig, out_dir, "ch05_pareto.png")

    # KL at 4 bits: one group of bars per format, one bar per method (INT8 and fp16 are ~1000x
    # smaller and would flatten the chart; the table has them).
    int4 = [r for r in results if r.get("bits") == 4]
    if int4:
        methods = [m for m in ("rtn", "gptq", "gptq+act", "awq") if any(ch05_method(r) == m for r in int4)]
        fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 4.2), squeeze=False)
        width = 0.8 / max(1, len(methods))
        for ax, model in zip(axes[0], models):
            rows = [r for r in int4 if r["model"] == model]
            formats = list(dict.fromkeys(r["format"].replace("+act", "") for r in rows))
            for j, method in enumerate(methods):
                ys = []
                for f in formats:
                    match = [r for r in rows if ch05_method(r) == method and r["format"].replace("+act", "") == f]
                    ys.append(match[0]["kl"] if match else 0.0)
                ax.bar([i + (j - (len(methods) - 1) / 2) * width for i in range(len(formats))], ys, width,
                       label=CH05_STYLES[method][1])
            ax.set_xticks(range(len(formats)))
            ax.set_xticklabels([f.replace("-sym", "") for f in formats], fontsize=8)
            ax.set_ylabel("mean KL(fp32 ‖ quantized), nats (lower is better)")
            ax.set_title(model, fontsize=10)
            ax.grid(alpha=0.3, axis="y")
            ax.legend(fontsize=7)
        fig.suptitle(f"ch05: next-token KL divergence from fp32 at 4 bits (CPU oracle; git "
                     f"{report.get('git_sha', '?')})", fontsize=10)
        save(fig, out_dir, "ch05_kl.png")

    table = os.path.join(tables_dir, f"ch05_{report.get('backend', 'unknown')}_table.md")
    with open(table, "w") as f:
        f.write(ch05_results_table(report))
    print("wrote", table)


def ch05_results_table(report):
    """The tutorial's results table (markdown), one section per model."""
    results = records(report, "results")
    lines = []
    for model in dict.fromkeys(r["model"] for r in results):
        rows = [r for r in results if r["model"] == model]
        fp32 = next(r for r in rows if r["method"] == "fp32")
        lines += [f"**{model}** — calibration: {fp32['calibration']}; {fp32['evaluation']}.", "",
                  "| method | format | bits/weight | linears KiB | perplexity | Δ vs fp32 | "
                  "bits/byte | mean KL (nats) | decode tok/s (CPU sim.) |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            ppl = r.get("perplexity")
            delta = "" if r is fp32 or ppl is None else f"{100 * (ppl / fp32['perplexity'] - 1):+.2f}%"
            fmt = lambda v, f: "n/a" if v is None else format(v, f)  # noqa: E731
            lines.append(f"| {ch05_method(r)} | {r['format']} | {r['bits_per_weight']:.2f} | "
                         f"{r['linear_bytes'] / 1024:,.1f} | {fmt(ppl, '.4f')} | {delta} | "
                         f"{fmt(r.get('bits_per_byte'), '.4f')} | {r['kl']:.2e} | "
                         f"{r['decode_tokens_per_s']:.1f} |")
        lines.append("")
    outliers = records(report, "outliers")
    if outliers:
        names = {"attention": "wq/wk/wv input", "attention_out": "wo input", "ffn": "w1/w3 input",
                 "ffn_hidden": "w2 input"}
        lines += ["Activation outliers on the calibration inputs (max over blocks): spread = "
                  "max_c mean|x_c| / mean_c mean|x_c|, peak = max_c max|x_c| / mean_c mean|x_c|.", "",
                  "| model | input | spread | peak |", "|---|---|---:|---:|"]
        for model in dict.fromkeys(r["model"] for r in outliers):
            for kind in dict.fromkeys(r["input"] for r in outliers):
                rs = [r for r in outliers if r["model"] == model and r["input"] == kind]
                if rs:
                    lines.append(f"| {model} | {names.get(kind, kind)} | "
                                 f"{max(r['mean_ratio'] for r in rs):.2f} | "
                                 f"{max(r['peak_ratio'] for r in rs):.1f} |")
        lines.append("")
    lines.append(f"Device: {report.get('device', '?')} ({device_label(report)}); perplexity, "
                 f"bits/byte and KL from the CPU oracle on the dequantized weights; decode tokens/s "
                 f"through the quantized kernels, {report.get('step_clock', 'wall time')}; git "
                 f"{report.get('git_sha', '?')}, {report.get('date', '?')}.")
    return "\n".join(lines) + "\n"
