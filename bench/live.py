"""Live delay, throughput and memory of `tefq run --follow`, fed by `tefq publish`, as YABench
measures an engine under test (a benchmark, not a test).

    python bench/live.py --rates 5000,50000 --seconds 30 [--warmup 10] [--source redis,dir,dir-parquet]
                         [--phase 500|random] [--variant LABEL=PYTHON ... --pairs N]
                         [--search] [--check-seconds N] [--cycle-seconds S] [--json OUT] [--plot PREFIX]

Per source and rate: an IPTV log is generated (Parquet, one user per 50 events; a run longer than
`--cycle-seconds`, default 60, gets the log of that many seconds in rounds, each ending with a quit
for every open fact, so that its audience and state do not grow with its length: bench/live_log.py);
the stream is a private redis-server on a
loopback port (`--source redis`) or a directory (`--source dir`, one TSV file per second, written
hidden then renamed; `dir-parquet`: Parquet files, which the run reads without staging).
`tefq run UC1 --every 1s --follow --stream …` is started (Spark; before its publisher: an absent
key or an empty directory is an empty stream), fed a trickle until its first
micro-batch is done (Spark and its Python workers started), then `tefq publish LOG --to … --rate R
--interval 1s --restamp now` feeds it for warmup + seconds; only ticks of the last `seconds` are
measured. Every element is stamped with the wall clock of its interval, so tick `tau` is a
wall-clock instant: a tick's delay is the moment its first row appears in the run's --out (tailed
every 20 ms) minus `tau` — sink commit plus hand-over, what a user sees. The publisher's intervals
end `--phase` ms after each whole second (default 500, the mean of an unaligned publisher; `random`:
from its start, as before), and a tick waits that long for the interval that makes it final
(docs/live.md, "Latency"): "engine" is the delay minus the phase.

Variants (`--variant LABEL=PYTHON`, several): each rate is measured under each, alternated
`--pairs` times (A B A B: the same load for both on a shared machine); PYTHON runs first in the
run's process (patch `tefq.spark.runtime.follow.TRIGGER`, or a Spark setting through
`SparkSession.Builder.config`). The run's CPU (driver, JVM, workers, from /proc) per second of
input is printed beside the phases: under load it compares where wall-clock delay cannot.

Sustained: the rate asked is sustained when the delay does not grow over the measured seconds
(least-squares slope of delay over time below `GROWTH_MS_PER_S`, and the median of the last minute
at most `GROWTH_LAST_WINDOW_MS` above the first's; thirds of a run under three minutes), every
measured tick but two was reported within 5 s of the publisher's end, and the publisher kept its
schedule (within `PUBLISHER_SLACK_S`). `--search` then doubles the highest sustained rate until
one is not, and bisects between the two (`--search-steps`). Correctness: the rows of every
reported tick against the oracle's over the same input (a bounded `tefq run --engine oracle` after
the run; with `--check-seconds N` the ticks of the first N measured seconds' files:
bench/live_oracle.py). Memory: the resident set of the run's driver (Python), its JVM and its
Python workers, sampled every 0.5 s.
Profile: the median of each phase of Spark's `durationMs` and of the state store's times over the
micro-batches with input (stage by stage: bench/event_log_stages.py).
State: the open facts, the state's bytes, the store's rows and RocksDB's sizes, and the state
store's work per 100,000 events, first third of the micro-batches against the last
(bench/live_state.py): whether a run's state grows with it.
Per tick (`breakdown`, with a fixed --phase): the micro-batch that made it final (the first whose
event time passed it, from the run's progress records) and where its delay went: the phase, the
wait for the micro-batch running when its interval was sent, the trigger's wait, that micro-batch,
the hand-over to --out (docs/live.md, "Where a tick's delay goes").
Plots (`--plot PREFIX`): PREFIX-delay-over-time.png and PREFIX-delay-vs-rate.png.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_log import generated_log  # noqa: E402 (bench/live_log.py)
from live_oracle import oracle_agreement  # noqa: E402 (bench/live_oracle.py)
from live_state import state_trend, trend_line  # noqa: E402 (bench/live_state.py)
from memory import PeakMemory, cpu_ticks  # noqa: E402 (bench/memory.py)
TEFQ = [sys.executable, "-m", "tefq"]
os.environ.setdefault("TEFQ_SERVER", "0")  # the run in its own process: its JVM and workers are measured
DIR_SOURCES = {"dir": "tsv", "dir-parquet": "parquet"}  # --source: a followed directory of these files
GROWTH_MS_PER_S = 50.0  # a delay growing faster than this over the measured seconds is not sustained
GROWTH_LAST_WINDOW_MS = 1000.0  # nor one whose last window's median is this much above its first's
PUBLISHER_SLACK_S = 1.0  # nor one whose publisher fell further behind its schedule (the rate not delivered)
CYCLE_S = 60  # the generated log goes in rounds of this many seconds of input (bench/live_log.py)
WINDOW_S = 60  # the first and the last minute of a run of three minutes or more (else its thirds)


def uc1_every_second(directory: str) -> str:
    """UC1 with one-second ticks (YABench's setting)."""
    with open(os.path.join(ROOT, "usecases", "uc1.tef"), encoding="utf-8") as fh:
        text = fh.read()
    if '"PT10S"' not in text:  # a bench on another period would measure other ticks, and say nothing
        raise SystemExit("usecases/uc1.tef no longer ticks every PT10S: bench/live.py cannot make it tick every second")
    text = text.replace('"PT10S"', '"PT1S"')
    path = os.path.join(directory, "uc1_1s.tef")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


@dataclass
class Stream:
    """Where a run reads and the publisher writes: a Redis URL or a directory."""

    target: str
    server: subprocess.Popen | None = None
    fmt: str | None = None  # a directory's file format (tsv: staged by the run; parquet: read as it is)

    def close(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)


def open_stream(source: str, work: str, name: str) -> Stream:
    if source in DIR_SOURCES:
        path = os.path.join(work, f"live-{name}")
        os.makedirs(path)
        return Stream(path, fmt=DIR_SOURCES[source])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", work], stdout=subprocess.DEVNULL)
    for _ in range(200):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            return Stream(f"redis://127.0.0.1:{port}/live", proc)
        time.sleep(0.05)
    proc.terminate()
    raise SystemExit("redis-server did not start")


def cpu_seconds(before: dict[int, int], after: dict[int, int]) -> float:
    return sum(t - before.get(pid, 0) for pid, t in after.items()) / os.sysconf("SC_CLK_TCK")


class Tail(threading.Thread):
    """The first wall-clock moment each tick's row appears in a growing CSV file."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        self.path, self.first_seen, self.done = path, {}, threading.Event()

    def run(self) -> None:
        offset = 0
        while not self.done.is_set():
            if os.path.exists(self.path):
                with open(self.path, encoding="utf-8") as fh:
                    fh.seek(offset)
                    text = fh.read()
                cut = text.rfind("\n") + 1
                offset += len(text[:cut].encode("utf-8"))
                now = time.time() * 1000
                for line in text[:cut].splitlines():
                    head = line.split(",", 1)[0]
                    if head.isdigit():
                        self.first_seen.setdefault(int(head), now)
            time.sleep(0.02)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def growth_ms_per_s(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of delay (ms) over tick time (s): > 0 when the run falls behind."""
    if len(points) < 3:
        return float("nan")
    xs = [t / 1000 for t, _ in points]
    ys = [d for _, d in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else float("nan")


def first_and_last_window(points: list[tuple[int, float]], seconds: int) -> dict:
    """The median delay of the first and of the last window of the measured ticks (a minute, or a
    third of a run shorter than three minutes) and how much the last is above the first: a run that
    falls behind shows it there whatever the slope's noise."""
    window_ms = 1000 * (WINDOW_S if seconds >= 3 * WINDOW_S else max(seconds // 3, 1))
    if not points:
        return {"window_s": window_ms / 1000, "first_window_p50_ms": float("nan"),
                "last_window_p50_ms": float("nan"), "window_growth_ms": float("nan")}
    first = percentile([d for t, d in points if t < points[0][0] + window_ms], 0.5)
    last = percentile([d for t, d in points if t > points[-1][0] - window_ms], 0.5)
    return {"window_s": window_ms / 1000, "first_window_p50_ms": first, "last_window_p50_ms": last,
            "window_growth_ms": last - first}


@dataclass(frozen=True)
class Batch:
    """A micro-batch as its progress record gives it (wall-clock ms): trigger, the sink's commit
    (before commitOffsets) and the largest event time it read (None: no input)."""

    batch: int
    start: int
    sunk: int
    event_time: int | None
    add_batch: int

    @staticmethod
    def of(record: dict) -> "Batch | None":
        if record.get("start_ms") is None:
            return None
        d = record.get("durations_ms", {})
        end = record["start_ms"] + record.get("ms", 0) - d.get("commitOffsets", 0)
        return Batch(record["batch"], record["start_ms"], end, record.get("event_time"), d.get("addBatch", 0))


def tick_path(tau: int, seen: float, batches: list[Batch], phase_ms: int) -> dict | None:
    """Where tick `tau`'s delay went: the publisher's phase (its interval ending after `tau` is sent
    at tau + phase), the wait for the micro-batch running then to end, the wait until the next one
    starts (the trigger's; for a TSV directory also the driver's staging of the file, in series
    with the micro-batches, and its listing), the micro-batch that read the interval (the first whose event time passed `tau`: it made the tick
    final) and the hand-over from the sink's commit to the row in --out."""
    pub = tau + phase_ms
    final = next((b for b in batches if b.event_time is not None and b.event_time > tau), None)
    if final is None:
        return None
    before = [b for b in batches if b.batch < final.batch]
    running = before[-1] if before and before[-1].start <= pub < before[-1].sunk else None
    free = max(pub, running.sunk if running else pub)
    return {"tick": tau, "batch": final.batch, "phase": phase_ms, "running_batch": free - pub,
            "to_start": max(final.start - free, 0), "micro_batch": final.sunk - max(final.start, free),
            "hand_over": seen - final.sunk, "delay": seen - tau, "add_batch": final.add_batch,
            "reported_by_later_batch": any(b.sunk <= seen for b in batches if b.batch > final.batch)}


def breakdown(first_seen: dict[int, float], batch_records: list[dict], phase_ms: int | None) -> dict:
    """`tick_path` per measured tick and the medians of each part (docs/live.md, "Where a tick's
    delay goes")."""
    batches = sorted((b for b in map(Batch.of, batch_records) if b is not None), key=lambda b: b.batch)
    if phase_ms is None or not batches:
        return {}
    paths = [p for p in (tick_path(t, seen, batches, phase_ms) for t, seen in sorted(first_seen.items()))
             if p is not None]
    parts = ("phase", "running_batch", "to_start", "micro_batch", "hand_over", "delay")
    return {"ticks": paths, "median_ms": {k: percentile([p[k] for p in paths], 0.5) for k in parts},
            "p99_ms": {k: percentile([p[k] for p in paths], 0.99) for k in parts},
            "waited_for_a_running_batch": sum(1 for p in paths if p["running_batch"] > 0),
            "reported_by_a_later_batch": sum(1 for p in paths if p["reported_by_later_batch"])}


class Ready(threading.Thread):
    """Echoes the run's progress lines and notes when its first micro-batch is done."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream, self.first_batch = stream, threading.Event()

    def run(self) -> None:
        for line in self.stream:
            if "batch " in line:
                self.first_batch.set()
            if "warning" not in line:
                print("   run: " + line.rstrip(), file=sys.stderr, flush=True)


def publish(log: str, stream: Stream, rate: int, seconds: int, phase_ms: int | None = None) -> float:
    """`tefq publish` for `seconds` at `rate`; returns how far behind its schedule it fell at most (s):
    a publisher that cannot keep the rate (on two shared cores) does not test the run at that rate.
    Warm-up and measured seconds go to one publisher, measured over its last seconds: a second
    publisher starts up in about a second, a gap in the input that the first measured tick or
    window would wait for."""
    phase = [] if phase_ms is None else ["--phase", f"{phase_ms}ms"]
    fmt = ["--format", stream.fmt] if stream.fmt else []
    done = subprocess.run(TEFQ + ["publish", log, "--to", stream.target, "--rate", str(rate), "--interval", "1s",
                                  "--restamp", "now", "--limit", str(rate * seconds), *phase, *fmt], check=True,
                          stderr=subprocess.PIPE, text=True)
    behind = re.search(r"at most ([0-9.]+) s behind", done.stderr.strip().rsplit("\n", 1)[-1])
    return float(behind.group(1)) if behind else 0.0


def run_command(prelude: str) -> list[str]:
    """`python -m tefq`, or with a variant's `prelude` (Python run first in the run's process, e.g.
    patching a constant) the same entry point after it."""
    if not prelude:
        return TEFQ
    return [sys.executable, "-c", f"{prelude}\nfrom tefq.cli import main\nmain()"]


def start_run(doc: str, stream: Stream, rows: str, metrics: str, prelude: str = "") -> tuple[subprocess.Popen, Ready]:
    run = subprocess.Popen(run_command(prelude) + ["run", doc, "--engine", "spark", "--follow", "--stream",
                                                   stream.target, "--format", "csv", "--out", rows, "--metrics", metrics],
                           stderr=subprocess.PIPE, text=True)
    ready = Ready(run.stderr)
    ready.start()
    return run, ready


def warm_up(run: subprocess.Popen, ready: Ready, log: str, stream: Stream) -> None:
    """A few elements a second until the run's first micro-batch is done (Spark starting)."""
    while not ready.first_batch.is_set():
        if run.poll() is not None:
            stream.close()
            raise SystemExit(f"the run ended (exit {run.returncode}) before its first micro-batch")
        publish(log, stream, 10, 1)


@dataclass(frozen=True)
class Setting:
    """What one measurement varies: the publisher's phase against the ticks (ms; None: from its
    start, a random phase) and a variant (`label`, `prelude`: see `run_command`)."""

    phase_ms: int | None = 500
    label: str = ""
    prelude: str = ""
    cycle_s: int = 0  # the generated log goes in rounds of this many seconds (bench/live_log.py; 0: one log)


@dataclass
class Fed:
    """What one live run gave: its stream (still open: the oracle reads it next), its --out rows and
    --metrics, the moment each tick or window first appeared in --out, the run's peak memory and CPU
    seconds while fed, and the measured span: [started, published] in ms, `stopped` when it was signalled."""

    stream: Stream
    rows: str
    metrics: dict
    first_seen: dict[int, float]
    memory: dict[str, float]
    cpu_s: float
    behind: float
    started: float
    published: float
    stopped: float


def feed_live(doc: str, source: str, rate: int, seconds: int, warmup: int, work: str, name: str,
              setting: Setting = Setting()) -> Fed:
    """Run `doc` live on Spark over a fresh `source`, warm it up, feed it a generated log for warmup +
    seconds from one publisher (see `publish`), wait 5 s, stop it, and say what it gave."""
    log = generated_log(rate, seconds + warmup, work, setting.cycle_s)
    stream = open_stream(source, work, name)
    rows, metrics = os.path.join(work, f"rows-{name}.csv"), os.path.join(work, f"metrics-{name}.json")
    run, ready = start_run(doc, stream, rows, metrics, setting.prelude)
    tail, memory = Tail(rows), PeakMemory(run.pid).start()
    tail.start()
    warm_up(run, ready, log, stream)
    cpu_before = cpu_ticks(run.pid)
    behind = publish(log, stream, rate, warmup + seconds, setting.phase_ms)
    published, cpu = time.time() * 1000, cpu_seconds(cpu_before, cpu_ticks(run.pid))
    time.sleep(5)
    stopped = time.time() * 1000  # a tick reported after this waited for the run's last micro-batch
    run.send_signal(signal.SIGTERM)  # the run alone: its JVM stops with it
    run.wait(timeout=300)
    tail.done.set()
    memory.stop()
    tail.join()
    m = json.load(open(metrics, encoding="utf-8")) if os.path.exists(metrics) else {}
    return Fed(stream, rows, m, tail.first_seen, memory.peaks, cpu, behind,
               published - seconds * 1000, published, stopped)  # its last `seconds` are measured


def one_rate(source: str, rate: int, seconds: int, warmup: int, work: str, setting: Setting = Setting(),
             check_seconds: int | None = None) -> dict:
    """Run, warm up, feed for `seconds`, measure (see the module doc); `check_seconds`: compare
    with the oracle the ticks of the input published by then (from the measured start) only."""
    doc = uc1_every_second(work)
    fed = feed_live(doc, source, rate, seconds, warmup, work, f"{source}-{rate}-{setting.label}-{time.time_ns()}",
                    setting)
    started, published, m = fed.started, fed.published, fed.metrics
    steady = {t: seen - t for t, seen in fed.first_seen.items() if started <= t <= published}
    until = None if check_seconds is None else started + check_seconds * 1000
    same, reported = oracle_agreement(doc, fed.stream.target, fed.rows, until, work)
    fed.stream.close()
    measured = {t: seen for t, seen in fed.first_seen.items() if t in steady}
    expected = sum(1 for t in range(int(started) // 1000 * 1000 + 1000, int(published), 1000))
    in_time = sum(1 for t, seen in measured.items() if seen <= fed.stopped)
    r = summary(source, rate, seconds, warmup, steady, m, (same, reported), fed.memory, (in_time, expected))
    r["sustained"] = r["sustained"] and fed.behind <= PUBLISHER_SLACK_S  # else the rate was not delivered
    return {**r, "publisher_behind_s": fed.behind,
            "variant": setting.label, "phase_ms": setting.phase_ms, "run_cpu_s_per_s": fed.cpu_s / (warmup + seconds),
            "oracle_checked_seconds": check_seconds,
            "breakdown": breakdown(measured, m.get("micro_batches") or [], setting.phase_ms)}


def phase_medians(busy: list[dict]) -> dict[str, float]:
    """Per phase of Spark's `durationMs` (and the state store's own times, as `state.*`), its median
    over the micro-batches `busy` (the run's --metrics `micro_batches` that read input)."""
    phases = [{**b.get("durations_ms", {}), **{f"state.{k}": v for k, v in b.get("state_ms", {}).items()}} for b in busy]
    return {k: percentile([p.get(k, 0) for p in phases], 0.5) for k in sorted({k for p in phases for k in p})}


def summary(source: str, rate: int, seconds: int, warmup: int, steady: dict[int, float], metrics: dict,
            agreement: tuple[int, int], memory: dict[str, float], ticks: tuple[int, int]) -> dict:
    """The figures of one run; `ticks`: those reported within 5 s of the publisher's end, and those
    its measured span holds. A run that keeps up reports them all by then; one that falls behind
    reports its last ticks only through the micro-batch it finishes when stopped (their delays then
    fall towards the end: the slope alone would call it sustained)."""
    delays, over_time = list(steady.values()), sorted(steady.items())
    growth, windows = growth_ms_per_s(over_time), first_and_last_window(over_time, seconds)
    batches = [b for b in metrics.get("micro_batches") or [] if isinstance(b, dict)]
    busy = [b for b in batches[1:] if b.get("rows")]  # the first is Spark's start-up
    return {"source": source, "rate": rate, "seconds": seconds, "warmup": warmup, "ticks_measured": len(delays),
            "delay_ms_p50": percentile(delays, 0.5), "delay_ms_p95": percentile(delays, 0.95),
            "delay_ms_p99": percentile(delays, 0.99), "delay_ms_max": max(delays, default=float("nan")),
            "delay_growth_ms_per_s": growth, **windows,
            "ticks_expected": ticks[1], "ticks_in_time": ticks[0],
            "sustained": (ticks[0] >= ticks[1] - 2 and growth == growth and growth < GROWTH_MS_PER_S
                          and not windows["window_growth_ms"] > GROWTH_LAST_WINDOW_MS),
            "events_in": metrics.get("events_in"), "micro_batches": len(batches),
            "batch_rows_median": percentile([b["rows"] for b in busy], 0.5), "phases_ms_median": phase_medians(busy),
            "ticks_equal_to_oracle": agreement[0], "ticks_reported": agreement[1],
            "state_trend": state_trend(metrics), "peak_rss_mb": memory, "load_average": os.getloadavg()[0], "delay_over_time": over_time}


def search(source: str, found: list[dict], seconds: int, warmup: int, work: str, steps: int,
           setting: Setting = Setting(), check_seconds: int | None = None) -> list[dict]:
    """Double the highest sustained rate until one is not sustained, then bisect `steps` times."""
    ok = max((r["rate"] for r in found if r["sustained"]), default=None)
    bad = min((r["rate"] for r in found if not r["sustained"] and (ok is None or r["rate"] > ok)), default=None)
    tried: list[dict] = []
    for _ in range(steps):
        rate = (ok * 2 if bad is None else (ok + bad) // 2) if ok else max(1000, (bad or 10000) // 2)
        if rate in (ok, bad) or rate <= 0:
            break
        r = one_rate(source, rate, seconds, warmup, work, setting, check_seconds)
        tried.append(r)
        report(r)
        ok, bad = (rate, bad) if r["sustained"] else (ok, rate)
    return tried


def report(r: dict) -> None:
    mem = r["peak_rss_mb"]
    checked = f" (of the first {r['oracle_checked_seconds']} s)" if r.get("oracle_checked_seconds") else ""
    engine = (f"  engine p50 {r['delay_ms_p50'] - r['phase_ms']:.0f} p99 {r['delay_ms_p99'] - r['phase_ms']:.0f} ms"
              if r.get("phase_ms") is not None else "")
    print(f"{r.get('variant') or '-':>8} {r['source']:>5} {r['rate']:>8,}/s  delay p50 {r['delay_ms_p50']:.0f} ms  "
          f"p95 {r['delay_ms_p95']:.0f}  p99 {r['delay_ms_p99']:.0f}  max {r['delay_ms_max']:.0f}  "
          f"growth {r['delay_growth_ms_per_s']:.0f} ms/s, median of the first {r['window_s']:.0f} s "
          f"{r['first_window_p50_ms']:.0f} ms, of the last {r['last_window_p50_ms']:.0f} ms  "
          f"({'sustained' if r['sustained'] else 'NOT sustained'}, {r['ticks_measured']} of "
          f"{r.get('ticks_expected', r['ticks_measured'])} ticks reported, {r.get('ticks_in_time', '?')} in time; publisher at most "
          f"{r.get('publisher_behind_s', 0):.1f} s behind)  "
          f"{r['micro_batches']} micro-batches  ticks equal to the oracle {r['ticks_equal_to_oracle']}/"
          f"{r['ticks_reported']}{checked}  peak RSS driver {mem['driver_mb']:.0f} MB, JVM {mem['jvm_mb']:.0f}, "
          f"workers {mem['python_workers_mb']:.0f}  (load average {r['load_average']:.1f}){engine}", flush=True)
    phases = ", ".join(f"{k} {v:.0f}" for k, v in r["phases_ms_median"].items() if v)
    cpu = f"; the run's CPU {r['run_cpu_s_per_s']:.2f} s per second of input" if "run_cpu_s_per_s" in r else ""
    print(f"        a micro-batch with input (median, {r['batch_rows_median']:.0f} events): {phases} ms{cpu}", flush=True)
    if r.get("state_trend"):
        print(f"        state, first -> last third of the micro-batches: {trend_line(r['state_trend'])}", flush=True)
    bd = r.get("breakdown")
    if bd and bd["ticks"]:
        parts = ", ".join(f"{k} {bd['median_ms'][k]:.0f} / {bd['p99_ms'][k]:.0f}" for k in bd["median_ms"])
        print(f"        where a tick's delay goes (median / p99 ms over {len(bd['ticks'])} ticks): {parts}; "
              f"{bd['waited_for_a_running_batch']} waited for a running micro-batch, "
              f"{bd['reported_by_a_later_batch']} reported by a later one than made them final", flush=True)


def save_figure(path: str, draw, size: tuple[float, float] = (8, 4.5)) -> None:
    """One PNG: `draw(ax)` on a fresh figure, then its legend (bench/live_windowed.py's too)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    draw(ax)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_plots(prefix: str, over_time, against_rate) -> None:
    """PREFIX-delay-over-time.png and PREFIX-delay-vs-rate.png, each drawn by its function."""
    save_figure(f"{prefix}-delay-over-time.png", over_time)
    save_figure(f"{prefix}-delay-vs-rate.png", against_rate, (6, 4.5))


def plot(results: list[dict], prefix: str) -> None:
    def over_time(ax) -> None:
        for r in results:
            pts = r["delay_over_time"]
            if pts:
                t0, end = pts[0][0], (pts[-1][0] - pts[0][0]) / 1000
                line, = ax.plot([(t - t0) / 1000 for t, _ in pts], [d / 1000 for _, d in pts],
                                label=f"{r['source']} {r['rate']:,}/s {r.get('variant') or ''}".rstrip())
                w = r["window_s"]  # the first and the last window's median: does the delay grow?
                ax.plot([0, w], [r["first_window_p50_ms"] / 1000] * 2, "--", color=line.get_color(), linewidth=2.5)
                ax.plot([end - w, end], [r["last_window_p50_ms"] / 1000] * 2, "--", color=line.get_color(),
                        linewidth=2.5)
        ax.set(xlabel="tick time (s after the first measured tick)", ylabel="tick delay (s)",
               title="tefq live UC1: delay over time (dashed: first and last window's median)")

    def against_rate(ax) -> None:
        for source in sorted({r["source"] for r in results}):
            rs = sorted((r for r in results if r["source"] == source), key=lambda r: r["rate"])
            for q, style in (("p50", "o-"), ("p99", "s--")):
                ax.plot([r["rate"] for r in rs], [r[f"delay_ms_{q}"] / 1000 for r in rs], style,
                        label=f"{source} {q}")
        ax.set(xscale="log", xlabel="events/s asked", ylabel="tick delay (s)",
               title="tefq live UC1: delay against rate")

    save_plots(prefix, over_time, against_rate)


def add_variant_arguments(ap: argparse.ArgumentParser, measured: str) -> None:
    """--phase, --variant and --pairs, as both live benches take them (`measured`: a tick, a window)."""
    ap.add_argument("--phase", default="500", help="ms after each whole second the publisher's intervals end "
                    f"(so each {measured} waits that long for its interval), or `random` (counted from its start)")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=PYTHON",
                    help="measure each run under each variant: PYTHON runs in the run's process first "
                         "(e.g. patching tefq.spark.runtime.follow.TRIGGER); one LABEL= with nothing is the baseline")
    ap.add_argument("--pairs", type=int, default=1, help="with --variant: rounds of one run per variant, alternated")


def variant_settings(args: argparse.Namespace, cycle_s: int = 0) -> list[Setting]:
    """One Setting per --variant (the baseline alone without one), at --phase."""
    phase = None if args.phase == "random" else int(args.phase)
    return [Setting(phase, *v.split("=", 1), cycle_s=cycle_s) for v in args.variant] or [Setting(phase, cycle_s=cycle_s)]


def require_redis(sources: list[str]) -> None:
    if "redis" in sources and shutil.which("redis-server") is None:
        raise SystemExit("--source redis needs redis-server (Debian: apt-get install redis-server)")


def write_results(out: list[dict], json_path: str | None, plot_prefix: str | None, plot_results) -> None:
    """The runs' figures to `--json`, their plots by `plot_results` to `--plot`'s prefix (each if asked)."""
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    if plot_prefix:
        plot_results(out, plot_prefix)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="5000,50000", help="events per second, comma-separated")
    ap.add_argument("--seconds", type=int, default=30, help="measured seconds per rate")
    ap.add_argument("--warmup", type=int, default=10,
                    help="seconds fed at the rate, unmeasured, once the run's first micro-batch is done")
    ap.add_argument("--source", default="redis,dir", help="redis, dir (TSV files), dir-parquet (comma-separated)")
    ap.add_argument("--search", action="store_true", help="then search for the highest sustained rate")
    ap.add_argument("--search-steps", type=int, default=4, help="runs the search may take per source")
    add_variant_arguments(ap, "tick")
    ap.add_argument("--check-seconds", type=int, default=None, metavar="N",
                    help="compare with the oracle only the ticks of the first N measured seconds of input "
                         "(a directory source; for runs too long for the oracle's memory: bench/live_oracle.py)")
    ap.add_argument("--cycle-seconds", type=int, default=CYCLE_S, metavar="S",
                    help=f"a longer run is fed the log of its first S seconds in rounds, each ending with a quit for "
                         f"every open fact: the audience, and the state, of S seconds (default {CYCLE_S}; 0: one "
                         f"log for the whole run, its audience growing with it; bench/live_log.py)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--plot", metavar="PREFIX", help="write PREFIX-delay-over-time.png and PREFIX-delay-vs-rate.png")
    args = ap.parse_args()
    sources = args.source.split(",")
    require_redis(sources)
    settings = variant_settings(args, args.cycle_seconds)
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tefq-live-") as work:
        for source in sources:
            found = []
            for rate in (int(r) for r in args.rates.split(",")):
                for setting in settings * args.pairs:  # A B A B: same-run pairs under the same load
                    found.append(one_rate(source, rate, args.seconds, args.warmup, work, setting, args.check_seconds))
                    report(found[-1])
            if args.search:
                found += search(source, found, args.seconds, args.warmup, work, args.search_steps, settings[0],
                                args.check_seconds)
            out += found
    write_results(out, args.json, args.plot, plot)


if __name__ == "__main__":
    main()
