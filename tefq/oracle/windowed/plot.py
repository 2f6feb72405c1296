"""`--plot`: precision / recall and result sizes per window (YABench's charts)."""
from __future__ import annotations

from pathlib import Path

from tefq.errors import TefqError
from tefq.oracle.windowed.check import CheckResult


def plot(result: CheckResult, path: str | Path, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = result.windows
    x = list(range(1, len(ws) + 1))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6, len(ws) * 0.35), 6), sharex=True)
    ax1.plot(x, [w.precision for w in ws], "o-", label="precision")
    ax1.plot(x, [w.recall for w in ws], "s--", label="recall")
    if any(w.gracious_precision is not None for w in ws):
        ax1.plot(x, [w.gracious_precision if w.gracious_precision is not None else w.precision for w in ws],
                 "^:", label="precision (gracious)")
        ax1.plot(x, [w.gracious_recall if w.gracious_recall is not None else w.recall for w in ws],
                 "v:", label="recall (gracious)")
    ax1.set_ylim(-0.05, 1.05)
    ax1.set_ylabel("ratio")
    ax1.legend(loc="lower left", fontsize="small")
    ax1.set_title(title or f"{result.system} {result.query}: {result.verdict} (t0={result.t0})")
    width = 0.4
    ax2.bar([i - width / 2 for i in x], [w.expected for w in ws], width, label="expected")
    ax2.bar([i + width / 2 for i in x], [w.actual for w in ws], width, label="actual")
    ax2.set_xlabel("window")
    ax2.set_ylabel("results")
    ax2.set_xticks(x)
    ax2.set_xticklabels([f"{w.open / 1000:g}-{w.close / 1000:g}s" for w in ws], rotation=60, fontsize="x-small")
    ax2.legend(fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as e:
        raise TefqError(f"cannot write the plot: {e.strerror}", str(path)) from None
    finally:
        plt.close(fig)
