"""Helpers every chapter's plotter shares: device labels, record selection, saving."""
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported for the chapter modules)


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
