"""Live delay and throughput of `tefq run --follow` over a Redis stream fed by `tefq publish`, as
YABench measures an engine under test (a benchmark, not a test).

    python bench/live.py --rates 5000,50000 --seconds 30 [--warmup 20] [--json OUT]

Per rate: an IPTV log is generated (TSV), a private redis-server is started on a loopback port,
`tefq run UC1 --every 1s --follow --stream redis://…` is started (Spark; before its publisher: an
absent key is an empty stream), fed a trickle until its first micro-batch is done (Spark and its
Python workers started), then `tefq publish LOG --to redis://… --rate R --interval 1s --restamp
now` feeds it for warmup + seconds; only ticks of the last `seconds` are measured. Every element is stamped with the wall clock of its
interval, so tick `tau` is a wall-clock instant: a tick's delay is the moment its first row appears
in the run's --out (tailed every 20 ms) minus `tau` — sink commit plus hand-over, what a user sees.
Throughput: the rate sustained is the rate asked when the delay does not grow over the measured
seconds (see `delay_over_time`). Correctness: the rows of every reported tick against the oracle over the same entries (read
back from Redis after the run).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEFQ = [sys.executable, "-m", "tefq"]


def uc1_every_second(directory: str) -> str:
    """UC1 with one-second ticks (YABench's setting)."""
    with open(os.path.join(ROOT, "usecases", "uc1.tef"), encoding="utf-8") as fh:
        text = fh.read().replace('"P10S"', '"PT1S"')
    path = os.path.join(directory, "uc1_1s.tef")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def start_redis(directory: str) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", directory], stdout=subprocess.DEVNULL)
    for _ in range(200):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            return proc, port
        time.sleep(0.05)
    raise SystemExit("redis-server did not start")


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


def oracle_agreement(doc: str, url: str, rows_csv: str) -> tuple[int, int]:
    """(ticks whose rows equal the oracle's, ticks reported), over the entries published: the
    oracle's rows written by the same CSV writer, compared line by line per tick."""
    from tefq.analysis import load
    from tefq.io.redis_stream import RedisStream, read_elements
    from tefq.io.result_writers import write_results
    from tefq.oracle import run as oracle_run

    result = oracle_run(load(doc), list(read_elements(RedisStream.parse(url))))
    want_csv = rows_csv + ".oracle"
    write_results(result.results, "csv", want_csv, "ms")

    def by_tick(path: str) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                head = line.split(",", 1)[0]
                if head.isdigit():
                    out.setdefault(int(head), []).append(line)
        return {t: sorted(lines) for t, lines in out.items()}

    got, want = by_tick(rows_csv), by_tick(want_csv)
    return sum(1 for t, lines in got.items() if lines == want.get(t)), len(got)


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


def publish(log: str, url: str, rate: int, seconds: int) -> None:
    subprocess.run(TEFQ + ["publish", log, "--to", url, "--rate", str(rate), "--interval", "1s", "--restamp", "now",
                           "--limit", str(rate * seconds), "--quiet"], check=True)


def one_rate(rate: int, seconds: int, warmup: int, work: str) -> dict:
    """Run, warm up (until the run's first micro-batch is done, then `warmup` s more), feed for
    `seconds`, measure (see the module doc)."""
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    total = rate * (seconds + warmup + 5)
    data = os.path.join(work, f"data-{rate}")
    generate(IptvConfig(events=total, users=max(100, total // 50), channels=20, seed=3), data, fmt="tsv")
    log = os.path.join(data, "log")
    redis_proc, port = start_redis(work)
    url = f"redis://127.0.0.1:{port}/live"
    rows, metrics = os.path.join(work, f"rows-{rate}.csv"), os.path.join(work, f"metrics-{rate}.json")
    doc = uc1_every_second(work)
    run = subprocess.Popen(TEFQ + ["run", doc, "--engine", "spark", "--follow", "--stream", url, "--format", "csv",
                                   "--out", rows, "--metrics", metrics], stderr=subprocess.PIPE, text=True)
    ready = Ready(run.stderr)
    ready.start()
    tail = Tail(rows)
    tail.start()
    while not ready.first_batch.is_set():  # Spark starting: a few elements a second until a batch is done
        if run.poll() is not None:
            redis_proc.terminate()
            raise SystemExit(f"the run ended (exit {run.returncode}) before its first micro-batch")
        publish(log, url, 10, 1)
    publish(log, url, rate, warmup)
    started = time.time() * 1000
    publish(log, url, rate, seconds)
    published = time.time() * 1000
    time.sleep(5)
    run.send_signal(signal.SIGTERM)  # the run alone: its JVM stops with it
    run.wait(timeout=300)
    tail.done.set()
    tail.join()
    steady = {t: seen - t for t, seen in tail.first_seen.items() if started <= t <= published}
    m = json.load(open(metrics, encoding="utf-8")) if os.path.exists(metrics) else {}
    same, reported = oracle_agreement(doc, url, rows)
    redis_proc.terminate()
    delays = list(steady.values())
    batches = [b for b in m.get("micro_batches") or [] if isinstance(b, dict)]
    return {"rate": rate, "seconds": seconds, "warmup": warmup, "ticks_measured": len(delays),
            "delay_ms_p50": percentile(delays, 0.5), "delay_ms_p95": percentile(delays, 0.95),
            "delay_ms_p99": percentile(delays, 0.99), "delay_ms_max": max(delays, default=float("nan")),
            "events_in": m.get("events_in"), "events_per_s_measured": rate,
            "micro_batches": len(batches), "ticks_equal_to_oracle": same, "ticks_reported": reported,
            "load_average": os.getloadavg()[0], "delay_over_time": sorted(steady.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="5000,50000", help="events per second, comma-separated")
    ap.add_argument("--seconds", type=int, default=30, help="measured seconds per rate")
    ap.add_argument("--warmup", type=int, default=10,
                    help="seconds fed at the rate, unmeasured, once the run's first micro-batch is done")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("bench/live.py needs redis-server (Debian: apt-get install redis-server)")
    out = []
    with tempfile.TemporaryDirectory(prefix="tefq-live-") as work:
        for rate in (int(r) for r in args.rates.split(",")):
            r = one_rate(rate, args.seconds, args.warmup, work)
            out.append(r)
            print(f"{rate:>8,}/s  delay p50 {r['delay_ms_p50']:.0f} ms  p95 {r['delay_ms_p95']:.0f}  "
                  f"p99 {r['delay_ms_p99']:.0f}  max {r['delay_ms_max']:.0f}  ({r['ticks_measured']} ticks)  "
                  f"{r['micro_batches']} micro-batches, {r['events_in']:,} events read  "
                  f"ticks equal to the oracle {r['ticks_equal_to_oracle']}/{r['ticks_reported']}  "
                  f"(load average {r['load_average']:.1f})", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
