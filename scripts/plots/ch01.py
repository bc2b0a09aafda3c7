"""Chapter 1: naive KV cache — plots and the results table from its --json report."""
import os

from plots.common import device_label, plt, records, save  # noqa: F401


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
