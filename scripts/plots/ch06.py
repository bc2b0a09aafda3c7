"""Chapter 6: speculative decoding — plots and the results table from its --json report."""
import os

from plots.common import device_label, plt, records, save  # noqa: F401


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
    head = ["| case | draft | γ | α | tokens/forward | predicted tokens/forward | empty rounds | "
            "c (measured) | verify cost | speedup measured | predicted (c) | "
            "predicted (verify cost) | predicted (c = bytes) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines = list(head)
    for table in ("sweep", "warning"):
        rows = [r for r in records(report, table) if r.get("path") == "kernels"]
        for r in rows:
            lines.append(f"| {r['case']} | {r['draft']} | {r['gamma']} | {r['alpha']:.2f} | "
                         f"{r['tokens_per_forward']:.2f} | "
                         f"{r.get('predicted_tokens_per_forward', float('nan')):.2f} | "
                         f"{100 * r.get('empty_rounds', float('nan')):.0f}% | "
                         f"{r['c']:.2f} | {r['verify_cost']:.2f} | "
                         f"{r['measured_speedup']:.2f} | {r['predicted_speedup']:.2f} | "
                         f"{r['predicted_with_verify']:.2f} | {r['predicted_at_bytes']:.2f} |")
    lines += ["", f"Through the kernels on {report.get('device', '?')} ({device_label(report)}); "
              f"prompts: {report.get('prompts', '?')}; git {report.get('git_sha', '?')}, "
              f"{report.get('date', '?')}."]
    return "\n".join(lines) + "\n"
