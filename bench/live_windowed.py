"""Live delay and correctness of windowed (RSP-QL) queries under `tefq run --follow`, fed by `tefq
publish`, as YABench measures windowed engines (a benchmark, not a test).

    python bench/live_windowed.py --rates 10000,50000,100000 --seconds 30 [--warmup 10]
                                  [--source redis,dir] [--query sliding,tumbling] [--json OUT] [--plot PREFIX]
                                  [--phase 500|random] [--variant LABEL=PYTHON ... --pairs N] [--no-check]

Per query, source and rate, bench/live.py's machinery: a generated IPTV log (Parquet), a private
redis-server or a followed directory, the run started first and warmed up, then `tefq publish LOG
--to … --rate R --interval 1s --restamp now` for warmup + seconds (only windows closing in the last
`seconds` are measured). Every element carries the wall clock of its interval, so a window's close
is a wall-clock instant: its **delay** is the moment its first row appears in the run's --out
(tailed every 20 ms) minus its close. The publisher's intervals end `--phase` ms after each whole
second (default 500, as bench/live.py): a window closing on a whole second waits that long for the
interval holding its close, the same in every run (`random`: from the publisher's start, a phase
of 0 to 1 s that every window of the run shares, so one run's p99 moves by up to a second). The
queries count joins per channel: `tumbling` over [RANGE PT1S STEP PT1S], `sliding` over [RANGE
PT10S STEP PT1S]. **Correctness** per window, as YABench reports it: precision (its rows that are
the oracle's) and recall (the oracle's rows it has), the oracle's bounded run over the same input,
for every window up to the last one the live run reported. Memory: the peak resident set of the
run's driver, JVM and Python workers.
Plots (`--plot PREFIX`): PREFIX-delay-over-time.png, PREFIX-delay-vs-rate.png.

Variants (`--variant LABEL=PYTHON`, as in bench/live.py): each run under each variant, alternated
`--pairs` times (A B A B: the same load for both on a shared machine); PYTHON runs first in the
run's process (e.g. patching a constant); `LABEL=` alone is the baseline.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import (Setting, add_variant_arguments, feed_live, percentile, phase_medians, require_redis,  # noqa: E402
                  save_plots, variant_settings, write_results)  # (bench/live.py)
from live_oracle import TEFQ, by_tick  # noqa: E402 (bench/live_oracle.py)

WINDOWS = {"tumbling": ("PT1S", "PT1S", 1000), "sliding": ("PT10S", "PT1S", 1000)}  # RANGE, STEP, STEP in ms
SLACK_MS = 1500  # the Done-when of issue 40: a window's delay p99 at most one STEP + this


def query_file(kind: str, work: str) -> str:
    """Joins per channel over the `kind` window of the log (every --stream feeds it)."""
    rng, step, _ = WINDOWS[kind]
    path = os.path.join(work, f"{kind}.rspql")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"""PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <http://example.org/iptv/{kind}> AS
SELECT ?channel (COUNT(?user) AS ?joins)
FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE {rng} STEP {step}]
WHERE {{ WINDOW :w {{ ?user :join ?channel }} }}
GROUP BY ?channel
""")
    return path


def agreement(doc: str, stream: str, rows: str) -> dict:
    """Per window up to the live run's last: precision and recall of its rows against the oracle's
    bounded run over the same input (YABench's figures), and how many windows are equal."""
    want_csv = rows + ".oracle"
    subprocess.run(TEFQ + ["run", doc, "--engine", "oracle", "--stream", stream, "--format", "csv", "--out", want_csv],
                   check=True, stdout=subprocess.DEVNULL)
    return window_agreement(by_tick(rows), by_tick(want_csv))


def window_agreement(got: dict[int, list[str]], want: dict[int, list[str]]) -> dict:
    """Per window (its close -> its sorted CSV lines) up to the last one `got` has: precision and
    recall of `got`'s lines against `want`'s (a repeated line counts once per copy in both)."""
    last = max(got, default=-1)
    windows = sorted(t for t in set(got) | set(want) if t <= last)
    precision, recall = [], []
    for t in windows:
        g, w = got.get(t, []), want.get(t, [])
        common = sum(min(g.count(x), w.count(x)) for x in set(g))
        precision.append(common / len(g) if g else 1.0)
        recall.append(common / len(w) if w else 1.0)
    return {"windows_compared": len(windows), "windows_equal": sum(got.get(t) == want.get(t) for t in windows),
            "precision_min": min(precision, default=1.0), "recall_min": min(recall, default=1.0),
            "precision_mean": sum(precision) / len(precision) if precision else 1.0,
            "recall_mean": sum(recall) / len(recall) if recall else 1.0}


def one_run(kind: str, source: str, rate: int, seconds: int, warmup: int, work: str, check: bool = True,
            setting: Setting = Setting()) -> dict:
    """Run, warm up, feed for `seconds`, measure (the module doc); `check`: against the oracle."""
    doc = query_file(kind, work)
    fed = feed_live(doc, source, rate, seconds, warmup, work, f"{kind}-{source}-{rate}-{time.time_ns()}", setting)
    steady = sorted((t, seen - t) for t, seen in fed.first_seen.items() if fed.started <= t <= fed.published)
    delays = [d for _, d in steady]
    step_ms = WINDOWS[kind][2]
    checked = agreement(doc, fed.stream.target, fed.rows) if check else {}
    fed.stream.close()
    busy = [b for b in (fed.metrics.get("micro_batches") or [])[1:] if isinstance(b, dict) and b.get("rows")]
    return {"query": kind, "source": source, "rate": rate, "variant": setting.label, "phase_ms": setting.phase_ms,
            "seconds": seconds,
            "windows_measured": len(delays),
            "delay_ms_p50": percentile(delays, 0.5), "delay_ms_p99": percentile(delays, 0.99),
            "delay_ms_max": max(delays, default=float("nan")), "limit_ms": step_ms + SLACK_MS,
            "publisher_behind_s": fed.behind, **checked, "phases_ms_median": phase_medians(busy),
            "peak_rss_mb": fed.memory, "load_average": os.getloadavg()[0], "delay_over_time": steady}


def report(r: dict) -> None:
    mem = r["peak_rss_mb"]
    within = "within" if r["delay_ms_p99"] <= r["limit_ms"] else "OVER"
    checked = (f"{r['windows_equal']}/{r['windows_compared']} equal to the oracle's, precision min {r['precision_min']:.3f} "
               f"recall min {r['recall_min']:.3f}" if "windows_equal" in r else "not checked against the oracle")
    print(f"{r.get('variant') or '-':>8} {r['query']:>8} {r['source']:>5} {r['rate']:>8,}/s  window delay p50 {r['delay_ms_p50']:.0f} ms  "
          f"p99 {r['delay_ms_p99']:.0f} ({within} STEP + {SLACK_MS} ms)  max {r['delay_ms_max']:.0f}  "
          f"{r['windows_measured']} windows measured; {checked}  publisher at most "
          f"{r['publisher_behind_s']:.1f} s behind  peak RSS driver {mem['driver_mb']:.0f} MB, JVM {mem['jvm_mb']:.0f}, "
          f"workers {mem['python_workers_mb']:.0f}  (load average {r['load_average']:.1f})", flush=True)
    phases = ", ".join(f"{k} {v:.0f}" for k, v in r["phases_ms_median"].items() if v)
    print(f"        a micro-batch with input (median): {phases} ms", flush=True)


def plot(results: list[dict], prefix: str) -> None:
    def over_time(ax) -> None:
        for r in results:
            pts = r["delay_over_time"]
            if pts:
                ax.plot([(t - pts[0][0]) / 1000 for t, _ in pts], [d / 1000 for _, d in pts],
                        label=f"{r['query']} {r['source']} {r['rate']:,}/s {r.get('variant') or ''}".rstrip())
        ax.set(xlabel="window close (s after the first measured)", ylabel="window delay (s)",
               title="tefq live RSP-QL: a window's delay over time")

    def against_rate(ax) -> None:
        def key(r: dict) -> tuple[str, str, str]:
            return r["query"], r["source"], r.get("variant") or ""

        for k in sorted({key(r) for r in results}):
            rs = sorted((r for r in results if key(r) == k), key=lambda r: r["rate"])
            ax.plot([r["rate"] for r in rs], [r["delay_ms_p99"] / 1000 for r in rs], "o-",
                    label=" ".join((*k[:2], "p99", k[2])).rstrip())
        ax.axhline((1000 + SLACK_MS) / 1000, color="grey", linestyle=":", label="STEP + 1.5 s")
        ax.set(xscale="log", xlabel="elements/s asked", ylabel="window delay (s)",
               title="tefq live RSP-QL: delay against rate")

    save_plots(prefix, over_time, against_rate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="10000,50000,100000", help="elements per second, comma-separated")
    ap.add_argument("--seconds", type=int, default=30, help="measured seconds per run")
    ap.add_argument("--warmup", type=int, default=10, help="seconds fed at the rate, unmeasured")
    ap.add_argument("--source", default="redis,dir", help="redis, dir, dir-parquet (comma-separated)")
    ap.add_argument("--query", default="sliding,tumbling", help="sliding, tumbling (comma-separated)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--no-check", action="store_true", help="skip the oracle's run (profiling: it takes minutes)")
    ap.add_argument("--plot", metavar="PREFIX", help="write PREFIX-delay-over-time.png and PREFIX-delay-vs-rate.png")
    add_variant_arguments(ap, "window")
    args = ap.parse_args()
    require_redis(args.source.split(","))
    settings = variant_settings(args)
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tefq-livewin-") as work:
        for kind in args.query.split(","):
            for source in args.source.split(","):
                for rate in (int(r) for r in args.rates.split(",")):
                    for setting in settings * args.pairs:  # A B A B: same-run pairs under the same load
                        out.append(one_run(kind, source, rate, args.seconds, args.warmup, work, not args.no_check,
                                           setting))
                        report(out[-1])
    write_results(out, args.json, args.plot, plot)


if __name__ == "__main__":
    main()
