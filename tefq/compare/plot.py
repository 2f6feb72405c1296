"""The paper's figures for `tefq compare`: (a) intermediate bindings per window size (log scale),
(b) throughput per window size with the spread over repeats (Fig. 3 for UC1, Fig. 4 for UC2)."""
from __future__ import annotations

from typing import Sequence

LABELS = {"tef": "TEF-SPARQL (native facts)", "refresh": "C-SPARQL refresh, per fact",
          "refresh-group": "C-SPARQL refresh, per group", "sequence": "EP-SPARQL sequence",
          "csparql-query": "C-SPARQL queries (feedback)"}


def plot(rows: Sequence[dict], path: str, title: str = "") -> None:
    """Write both panels to one image; `rows` are `tefq compare` JSON rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    windows = sorted({r["window_s"] for r in rows})
    approaches = [a for a in LABELS if any(r["approach"] == a for r in rows)]
    fig, (ax_b, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(1, len(approaches))
    xs = range(len(windows))
    for i, a in enumerate(approaches):
        by_w = {r["window_s"]: r for r in rows if r["approach"] == a}
        vals = [max(by_w[w]["intermediate_bindings"], 1) if w in by_w else 0 for w in windows]
        ax_b.bar([x + (i - (len(approaches) - 1) / 2) * width for x in xs], vals, width, label=LABELS[a])
        pts = [(x, by_w[w]) for x, w in zip(xs, windows) if w in by_w and by_w[w].get("events_per_s") is not None]
        if pts:
            ys = [r["events_per_s"] for _, r in pts]
            lo = [r["events_per_s"] - r.get("events_per_s_min", r["events_per_s"]) for _, r in pts]
            hi = [r.get("events_per_s_max", r["events_per_s"]) - r["events_per_s"] for _, r in pts]
            ax_t.errorbar([x for x, _ in pts], ys, yerr=[lo, hi], marker="o", capsize=4, label=LABELS[a])
    for ax in (ax_b, ax_t):
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{w:g} s" for w in windows])
        ax.set_xlabel("window size")
    ax_b.set_yscale("log")
    ax_b.set_ylabel("intermediate bindings (log)")
    ax_b.set_title("(a) intermediate events / facts")
    rates = [r["events_per_s"] for r in rows if r.get("events_per_s")]
    if rates and max(rates) > 20 * min(rates):  # rates span decades across window sizes: log scale
        ax_t.set_yscale("log")
        ax_t.set_ylabel("throughput (events/s, log)")
    else:
        ax_t.set_ylabel("throughput (events/s)")
        ax_t.set_ylim(bottom=0)
    ax_t.set_title("(b) throughput")
    ax_b.legend(fontsize=8)
    ax_t.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
