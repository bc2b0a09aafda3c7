"""Chapter 2: paged KV cache — plots and the results table from its --json report."""
import os

from plots.common import device_label, plt, records, save  # noqa: F401


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
