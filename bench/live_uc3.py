"""Live UC3 with the programme guide published ahead of the viewing log (issue 24, spec §6.1): the
run loses nothing and equals the oracle (a demonstration with figures, not a test).

    python bench/live_uc3.py [--source redis|dir] [--rate 20000] [--ahead 2h] [--data DIR] [--json OUT]

The IPTV log and guide (`tefq gen iptv --epg --seed 1` unless --data) are fed as two live streams,
each second `--rate` log events and every guide event up to `--ahead` past the last log event
sent, so the guide's event time runs `--ahead` ahead of the log's. `tefq run usecases/uc3.tef
--follow` reads both (Spark); once it has read every event (its progress lines) it is stopped (SIGTERM). Then
the oracle runs bounded over the same input. Reported: late events (per stream), the ticks Spark
reported and how many equal the oracle's rows, line for line.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import TEFQ, open_stream  # noqa: E402  (bench/live.py: the same streams)
from live_oracle import by_tick  # noqa: E402  (the CSV read by tick)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def feed(log: list, guide: list, targets: tuple[str, str], rate: int, ahead_ms: int) -> None:
    """Each second: the next `rate` log events, and the guide up to `ahead_ms` past the last of them."""
    from tefq.publish import open_sink

    log_sink, guide_sink = open_sink(targets[0], None if "://" in targets[0] else "tsv"), \
        open_sink(targets[1], None if "://" in targets[1] else "tsv")
    g = 0
    start = time.monotonic()
    for k, i in enumerate(range(0, len(log), rate)):
        chunk = log[i:i + rate]
        upto = g
        while upto < len(guide) and guide[upto][0] <= chunk[-1][0] + ahead_ms:
            upto += 1
        if upto > g:
            guide_sink.write(guide[g:upto])
            g = upto
        log_sink.write(chunk)
        time.sleep(max(0.0, start + k + 1 - time.monotonic()))
    if g < len(guide):
        guide_sink.write(guide[g:])
    log_sink.close()
    guide_sink.close()


class EventsRead(threading.Thread):
    """Sums the `events read` of the run's progress lines (one per micro-batch)."""

    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream, self.total = stream, 0

    def run(self) -> None:
        for line in self.stream:
            m = re.search(r"\] batch \d+: events read (\d+)", line)
            if m:
                self.total += int(m.group(1))
            elif "warning" not in line:
                print("   run: " + line.rstrip(), file=sys.stderr, flush=True)


def wait_read(read: EventsRead, total: int, run: subprocess.Popen, limit_s: float = 1200) -> None:
    """Until the run has read `total` events and one more micro-batch had time to report (or the
    run ended, or `limit_s` passed)."""
    began = time.monotonic()
    while run.poll() is None and read.total < total and time.monotonic() - began < limit_s:
        time.sleep(0.5)
    time.sleep(5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("redis", "dir"), default="redis")
    ap.add_argument("--rate", type=int, default=20000, help="log events per second")
    ap.add_argument("--ahead", default="2h", help="how far the guide runs ahead of the log (a duration)")
    ap.add_argument("--data", help="a `tefq gen iptv --epg` directory (default: generated, seed 1)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    from tefq.analysis.durations import duration_ms
    from tefq.io.readers import read_stream

    with tempfile.TemporaryDirectory(prefix="tefq-live-uc3-") as work:
        data = args.data or os.path.join(work, "iptv")
        if not args.data:
            subprocess.run(TEFQ + ["gen", "iptv", "--out", data, "--epg", "--seed", "1"], check=True)
        log = sorted(read_stream(os.path.join(data, "log")), key=lambda e: e[0])
        guide = sorted(read_stream(os.path.join(data, "epg")), key=lambda e: e[0])
        streams = (open_stream(args.source, work, "log"), open_stream(args.source, work, "guide"))
        if args.source == "redis":  # one server, two keys
            streams[1].close()
            targets = (streams[0].target, streams[0].target.rsplit("/", 1)[0] + "/guide")
        else:
            targets = (streams[0].target, streams[1].target)
        rows, metrics = os.path.join(work, "rows.csv"), os.path.join(work, "metrics.json")
        doc = os.path.join(ROOT, "usecases", "uc3.tef")
        run = subprocess.Popen(TEFQ + ["run", doc, "--engine", "spark", "--follow", "--stream", targets[0],
                                       "--stream", targets[1], "--format", "csv", "--out", rows,
                                       "--metrics", metrics], stderr=subprocess.PIPE, text=True)
        read = EventsRead(run.stderr)
        read.start()
        began = time.monotonic()
        feed(log, guide, targets, args.rate, duration_ms(args.ahead, "--ahead"))
        fed = time.monotonic() - began
        wait_read(read, len(log) + len(guide), run)
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=300)
        want = rows + ".oracle"
        subprocess.run(TEFQ + ["run", doc, "--engine", "oracle", "--stream", targets[0], "--stream", targets[1],
                               "--format", "csv", "--out", want], check=True, stdout=subprocess.DEVNULL)
        got, expected = by_tick(rows), by_tick(want)
        m = json.load(open(metrics, encoding="utf-8"))
        out = {"source": args.source, "rate": args.rate, "ahead": args.ahead, "log_events": len(log),
               "guide_events": len(guide), "fed_seconds": round(fed, 1), "late_events": m.get("late_events"),
               "late_events_by_stream": m.get("late_events_by_stream"), "ticks_reported": len(got),
               "ticks_equal_to_oracle": sum(1 for t, lines in got.items() if lines == expected.get(t)),
               "oracle_ticks": len(expected), "rows_reported": sum(len(v) for v in got.values()),
               "load_average": os.getloadavg()[0]}
        for s in streams:
            s.close()
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
