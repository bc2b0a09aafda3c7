"""Chapters 3 and 4: static and continuous batching — plots and results tables from their
--json reports."""
import os

from plots.common import device_label, plt, records, save  # noqa: F401

# ------------------------------------------------------------------------------------------------
# chapters 3 and 4


def run_label(report):
    """'CPU simulator, cpu clock' and the like, for titles: where and how the time was taken."""
    executor = report.get("executor", "model")
    if report.get("backend") == "host":
        return "host CPU, wall clock, no model"
    if executor == "cost-model":
        return "cost model in virtual time (not a measurement)"
    return f"{device_label(report)}; {report.get('clock', 'wall')} clock"


def plot_ch03(report, out_dir, tables_dir):
    rows = sorted(records(report, "static"), key=lambda r: r["batch_size"])
    if not rows:
        return
    model = report.get("model", "?")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    sizes = [str(r["batch_size"]) for r in rows]
    ax1.bar(sizes, [r["output_tokens_per_s"] for r in rows])
    ax1.set_xlabel("batch size")
    ax1.set_ylabel("generated tokens / s")
    ax1.set_title("throughput")
    total = [r["useful_rows"] + r["padding_rows"] + r["idle_rows"] for r in rows]
    pct = lambda key: [100 * r[key] / t if t else 0 for r, t in zip(rows, total)]  # noqa: E731
    ax2.bar(sizes, pct("useful_rows"), label="useful")
    ax2.bar(sizes, pct("padding_rows"), bottom=pct("useful_rows"), label="padding")
    ax2.bar(sizes, pct("idle_rows"), bottom=[a + b for a, b in zip(pct("useful_rows"),
                                                                      pct("padding_rows"))],
            label="idle slots")
    ax2.set_xlabel("batch size")
    ax2.set_ylabel("% of computed rows")
    ax2.set_title("where the rows went")
    ax2.legend()
    fig.suptitle(f"ch03: static batching, {model} ({run_label(report)})", fontsize=10)
    save(fig, out_dir, "ch03_static_batching.png")
    lines = ["| batch size | out tok/s | useful rows | padding rows | idle rows | waste | "
             "e2e P50 ms | e2e P99 ms |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['batch_size']} | {r['output_tokens_per_s']:.1f} | {r['useful_rows']:,} | "
                     f"{r['padding_rows']:,} | {r['idle_rows']:,} | {100 * r['waste_fraction']:.1f}% | "
                     f"{1e3 * r['e2e_p50_s']:.0f} | {1e3 * r['e2e_p99_s']:.0f} |")
    write_table(tables_dir, "ch03", report, lines)


def write_table(tables_dir, name, report, lines):
    model = f"model {report['model']}; " if "model" in report else ""
    lines += ["", f"Device: {report.get('device', '?')} ({run_label(report)}); {model}"
              f"git {report.get('git_sha', '?')}, {report.get('date', '?')}."]
    path = os.path.join(tables_dir, f"{name}_{report.get('backend', 'unknown')}_table.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


def plot_ch04(report, out_dir, tables_dir):
    model = report.get("model", "?")
    tag = "_cost_model" if report.get("executor") == "cost-model" else ""
    sweep = records(report, "rate_sweep")
    if sweep:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        rates = sorted({r["rate"] for r in sweep}, key=lambda x: float("inf") if x < 0 else x)
        labels = ["inf" if x < 0 else f"{x:g}" for x in rates]
        for policy, style in (("static", "-o"), ("continuous", "-s")):
            by_rate = {r["rate"]: r for r in sweep if r["policy"] == policy}
            ax1.plot(labels, [by_rate[x]["output_tokens_per_s"] for x in rates], style, label=policy)
            ax2.plot(labels, [1e3 * by_rate[x]["e2e_p99_s"] for x in rates], style, label=policy)
        ax1.set_xlabel("request rate (per s; inf = all at once)")
        ax1.set_ylabel("generated tokens / s")
        ax2.set_xlabel("request rate (per s; inf = all at once)")
        ax2.set_ylabel("end-to-end latency P99, ms")
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(f"ch04: static vs continuous batching, {model} ({run_label(report)})",
                     fontsize=10)
        save(fig, out_dir, f"ch04_rate_sweep{tag}.png")
        lines = ["| rate /s | static tok/s | continuous tok/s | speedup | static e2e P99 ms | "
                 "continuous e2e P99 ms |", "|---:|---:|---:|---:|---:|---:|"]
        for x, label in zip(rates, labels):
            st = next(r for r in sweep if r["rate"] == x and r["policy"] == "static")
            co = next(r for r in sweep if r["rate"] == x and r["policy"] == "continuous")
            lines.append(f"| {label} | {st['output_tokens_per_s']:.1f} | {co['output_tokens_per_s']:.1f} | "
                         f"{co['output_tokens_per_s'] / st['output_tokens_per_s']:.2f}× | "
                         f"{1e3 * st['e2e_p99_s']:.0f} | {1e3 * co['e2e_p99_s']:.0f} |")
        write_table(tables_dir, f"ch04_rate{tag}", report, lines)
    chunked = records(report, "chunked")
    if chunked:
        fig, ax = plt.subplots(figsize=(7, 4))
        names = [r["config"] for r in chunked]
        x = range(len(names))
        for i, (key, label) in enumerate((("itl_p50_s", "ITL P50"), ("itl_p99_s", "ITL P99"),
                                          ("itl_max_s", "ITL max"))):
            ax.bar([j + 0.27 * (i - 1) for j in x], [1e3 * r[key] for r in chunked], width=0.27,
                   label=label)
        ax.set_xticks(list(x))
        ax.set_xticklabels(names)
        ax.set_ylabel("inter-token latency, ms")
        ax.set_title(f"ch04: chunked prefill and inter-token latency, {model}\n({run_label(report)})",
                     fontsize=10)
        ax.legend()
        ax.grid(alpha=0.3, axis="y")
        save(fig, out_dir, f"ch04_chunked_prefill{tag}.png")
        lines = ["| config | out tok/s | TTFT P50 ms | TTFT P99 ms | ITL P50 ms | ITL P99 ms | ITL max ms |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for r in chunked:
            lines.append(f"| {r['config']} | {r['output_tokens_per_s']:.1f} | {1e3 * r['ttft_p50_s']:.0f} | "
                         f"{1e3 * r['ttft_p99_s']:.0f} | {1e3 * r['itl_p50_s']:.1f} | "
                         f"{1e3 * r['itl_p99_s']:.1f} | {1e3 * r['itl_max_s']:.1f} |")
        write_table(tables_dir, f"ch04_chunked{tag}", report, lines)
    pool = sorted(records(report, "pool"), key=lambda r: -r["num_blocks"])
    if pool:
        fig, ax1 = plt.subplots(figsize=(7, 4))
        blocks = [str(r["num_blocks"]) for r in pool]
        ax1.bar(blocks, [r["preemptions"] for r in pool], color="tab:red", alpha=0.6,
                label="preemptions")
        ax1.set_xlabel("KV pool, blocks")
        ax1.set_ylabel("preemptions")
        ax2 = ax1.twinx()
        ax2.plot(blocks, [r["output_tokens_per_s"] for r in pool], "-o", label="tokens/s")
        ax2.set_ylabel("generated tokens / s")
        ax1.set_title(f"ch04: preemption as the KV pool shrinks, {model}\n({run_label(report)})",
                      fontsize=10)
        save(fig, out_dir, f"ch04_preemption{tag}.png")
        lines = ["| KV blocks | completed | preemptions | out tok/s | e2e P50 ms | e2e P99 ms |",
                 "|---:|---:|---:|---:|---:|---:|"]
        for r in pool:
            lines.append(f"| {r['num_blocks']} | {r['completed']} | {r['preemptions']} | "
                         f"{r['output_tokens_per_s']:.1f} | {1e3 * r['e2e_p50_s']:.0f} | {1e3 * r['e2e_p99_s']:.0f} |")
        write_table(tables_dir, f"ch04_pool{tag}", report, lines)
    cdf = records(report, "latency_cdf")
    timeline = records(report, "kv_timeline")
    if cdf and timeline:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        for r in cdf:
            v = sorted(1e3 * x for x in r["e2e_s"])
            ax1.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=r["config"])
        ax1.set_xlabel("end-to-end latency, ms")
        ax1.set_ylabel("fraction of requests")
        ax1.set_title("latency CDF")
        ax1.legend()
        ax1.grid(alpha=0.3)
        blocks = next((r["kv_blocks"] for r in records(report, "serving")), 1)
        for r in timeline:
            pts = r["points"]
            ax2.plot([1e3 * p["time_s"] for p in pts], [100 * p["kv_blocks_used"] / blocks for p in pts],
                     label=r["config"], linewidth=1)
        ax2.set_xlabel("time, ms")
        ax2.set_ylabel("KV blocks in use, %")
        ax2.set_title("KV usage over time")
        ax2.legend()
        ax2.grid(alpha=0.3)
        fig.suptitle(f"ch04: one workload, two policies, {model} ({run_label(report)})", fontsize=10)
        save(fig, out_dir, f"ch04_latency_kv{tag}.png")
        lines = ["| policy | out tok/s | TTFT P50 ms | TPOT ms | e2e mean ms | e2e P50 | e2e P90 | "
                 "e2e P99 | preemptions | waste |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in records(report, "serving"):
            lines.append(f"| {r['config']} | {r['output_tokens_per_s']:.1f} | {1e3 * r['ttft_p50_s']:.0f} | "
                         f"{1e3 * r['tpot_mean_s']:.1f} | {1e3 * r['e2e_mean_s']:.0f} | "
                         f"{1e3 * r['e2e_p50_s']:.0f} | {1e3 * r['e2e_p90_s']:.0f} | "
                         f"{1e3 * r['e2e_p99_s']:.0f} | {r['preemptions']} | {100 * r['waste_fraction']:.1f}% |")
        write_table(tables_dir, f"ch04_serving{tag}", report, lines)
    bench = records(report, "sched_bench")
    if bench:
        lines = ["| running sequences | µs per schedule() | µs per update() | ns per sequence |",
                 "|---:|---:|---:|---:|"]
        for r in bench:
            lines.append(f"| {r['num_seqs']} | {r['schedule_us']:.1f} | {r['update_us']:.1f} | "
                         f"{r['ns_per_seq']:.0f} |")
        write_table(tables_dir, "ch04_sched_bench", report, lines)
