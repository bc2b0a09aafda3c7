"""Chapter 8: serving — latency against request rate for each setup (engine alone, one replica,
replicas behind nginx) and the server's cost per streamed token, from bench_serving reports
(scripts/bench_serving.sh merges its runs into one)."""
import os

from plots.common import device_label, plt, records, save  # noqa: F401


def rate_key(rate):
    return float("inf") if rate < 0 else rate


def rate_text(rate):
    return "inf" if rate < 0 else f"{rate:g}"


def write_table(tables_dir, name, report, lines):
    lines += ["", f"Device: {report.get('device', '?')} ({device_label(report)}); model "
              f"{report.get('model', '?')}; workload {report.get('workload', '?')}; git "
              f"{report.get('git_sha', '?')}{' (dirty tree)' if report.get('git_dirty') else ''}, "
              f"{report.get('date', '?')}."]
    path = os.path.join(tables_dir, f"{name}_{report.get('backend', 'unknown')}_table.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


def plot_ch08(report, out_dir, tables_dir):
    load = records(report, "load")
    if load:
        labels = list(dict.fromkeys(r["label"] for r in load))
        rates = sorted({r["rate"] for r in load}, key=rate_key)
        x = list(range(len(rates)))
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        panels = ((axes[0][0], "ttft_ms", "TTFT, ms"), (axes[0][1], "tpot_ms", "TPOT, ms"),
                  (axes[1][0], "e2el_ms", "end-to-end latency, ms"))
        for i, label in enumerate(labels):
            by_rate = {r["rate"]: r for r in load if r["label"] == label}
            xs = [j for j, rate in enumerate(rates) if rate in by_rate]
            rows = [by_rate[rates[j]] for j in xs]
            color = f"C{i}"
            for ax, key, _ in panels:
                ax.plot(xs, [r[key]["p50"] for r in rows], "-o", color=color, label=f"{label} P50")
                ax.plot(xs, [r[key]["p99"] for r in rows], "--", color=color, alpha=0.7,
                        label=f"{label} P99")
            axes[1][1].plot(xs, [r["output_throughput"] for r in rows], "-o", color=color, label=label)
        for ax, _, ylabel in panels + ((axes[1][1], None, "generated tokens / s"),):
            ax.set_xticks(x)
            ax.set_xticklabels([rate_text(r) for r in rates])
            ax.set_xlabel("request rate (per s; inf = all at once)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        axes[1][1].legend(fontsize=7)
        fig.suptitle(f"ch08: latency against request rate, {report.get('model', '?')} "
                     f"({device_label(report)})", fontsize=10)
        save(fig, out_dir, "ch08_latency_vs_rate.png")
        lines = ["| setup | rate /s | done | req/s | out tok/s | TTFT P50 / P99 ms | "
                 "TPOT P50 / P99 ms | e2e P50 / P99 ms | goodput req/s |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for label in labels:
            for r in sorted((r for r in load if r["label"] == label), key=lambda r: rate_key(r["rate"])):
                goodput = "-" if r.get("goodput") is None else f"{r['goodput']:.2f}"
                lines.append(f"| {label} | {rate_text(r['rate'])} | {r['completed']}/{r['sent']} | "
                             f"{r['request_throughput']:.2f} | {r['output_throughput']:.1f} | "
                             f"{r['ttft_ms']['p50']:.0f} / {r['ttft_ms']['p99']:.0f} | "
                             f"{r['tpot_ms']['p50']:.0f} / {r['tpot_ms']['p99']:.0f} | "
                             f"{r['e2el_ms']['p50']:.0f} / {r['e2el_ms']['p99']:.0f} | {goodput} |")
        slo = next((r["slo"] for r in load if r.get("slo")), {})
        if slo:
            lines += ["", "Goodput: completed requests per second that met " +
                      ", ".join(f"{k.replace('_ms', '').upper()} ≤ {v:g} ms" for k, v in slo.items()) + "."]
        write_table(tables_dir, "ch08_load", report, lines)
    overhead = records(report, "overhead")
    server = next((r for r in overhead if "server_overhead" in r), None)
    engine = next((r for r in overhead if r.get("client_backend") == "engine"), None)
    if server:
        o = server["server_overhead"]
        t = o["server_us_per_token"]
        phases = ("request", "detokenize", "serialize", "write")
        fig, ax = plt.subplots(figsize=(7, 3.4))
        step_us_per_token = 1e3 * o["step_ms"] / max(o["tokens_per_step"], 1e-9)
        names = list(phases) + ["total"]
        ax.barh(names, [t[k] for k in names], color=[f"C{i}" for i in range(len(phases))] + ["0.4"])
        for i, k in enumerate(names):
            ax.text(t[k], i, f" {t[k]:.1f}", va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("server work per streamed token, µs (wall time on the HTTP threads)")
        ax.set_title(f"ch08: the server's cost per token at {o['tokens_per_step']:.0f} tokens per step "
                     f"= {o['server_work_per_step_pct']:.2f}% of the engine's step\n"
                     f"(engine: {step_us_per_token:.0f} µs per token; {device_label(report)})",
                     fontsize=9)
        ax.grid(alpha=0.3, axis="x")
        save(fig, out_dir, "ch08_server_overhead.png")
        e = engine.get("engine", {}) if engine else {}
        alone = (lambda key, fmt: f" | {format(e[key], fmt)}" if key in e else " | –")
        lines = ["| measure | over HTTP (1 replica) | engine alone |", "|---|---:|---:|",
                 f"| engine step (wall), ms | {o['step_ms']:.1f}{alone('step_ms', '.1f')} |",
                 f"| engine thread CPU per step, ms | {o['engine_thread_cpu_ms_per_step']:.1f}"
                 f"{alone('engine_thread_cpu_ms_per_step', '.1f')} |",
                 f"| tokens per step | {o['tokens_per_step']:.1f}{alone('tokens_per_step', '.1f')} |",
                 f"| engine step per token, µs | {step_us_per_token:.0f} | |"]
        for phase in phases:
            lines.append(f"| server: {phase}, µs per token (wall, HTTP threads) | {t[phase]:.1f} | |")
        lines += [f"| server: total, µs per token | {t['total']:.1f} | |",
                  f"| server work per step, % of the step time | {o['server_work_per_step_pct']:.2f} | |",
                  f"| CPU of all other threads, µs per token | {o['other_cpu_us_per_token']:.0f} | |",
                  f"| CPU of all other threads, % of the engine thread's | "
                  f"{o['other_cpu_vs_engine_pct']:.2f} | |",
                  f"| SSE events per token | {o['sse_events'] / max(o['generated_tokens'], 1):.2f} | |"]
        if engine:
            lines += [f"| client TPOT P50, ms | {server['tpot_ms']['p50']:.1f} | {engine['tpot_ms']['p50']:.1f} |",
                      f"| output tokens/s | {server['output_throughput']:.1f} | "
                      f"{engine['output_throughput']:.1f} |"]
        write_table(tables_dir, "ch08_overhead", report, lines)
