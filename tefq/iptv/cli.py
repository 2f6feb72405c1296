"""Commands of the IPTV subsystem: `tefq gen iptv`, `tefq stats`, `tefq usecase`.

`register(subparsers)` adds them to tefq's parser; each sets `func=handler(args) -> int`.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from tefq.errors import TefqError
from tefq.service import Output, QueryFile, RunRequest, default_engine, execute

DEFAULT_DATA = os.path.join("data", "iptv-default")
USECASES = ("uc1", "uc2", "uc3")


def register(subparsers: argparse._SubParsersAction) -> None:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.result_writers import FORMATS as RESULT_FORMATS

    p = subparsers.add_parser("gen", help="generate synthetic streams")
    gens = p.add_subparsers(dest="generator", metavar="GENERATOR", parser_class=type(p))
    gens.required = True
    g = gens.add_parser("iptv", help="an IPTV viewing log (and with --epg its program guide)",
                        description="Writes DIR/log/part-NNNNN.<format> (and DIR/epg/...): see docs/iptv.md.")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory (created; must hold no generated files)")
    g.add_argument("--events", type=int, default=100_000, metavar="N", help="log events (default 100000)")
    g.add_argument("--users", type=int, default=22_872, metavar="U", help="users (default 22872)")
    g.add_argument("--channels", type=int, default=234, metavar="C", help="channels (default 234)")
    g.add_argument("--days", type=float, default=1.0, metavar="D", help="time span in days (default 1)")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    g.add_argument("--epg", action="store_true", help="also write the program guide stream")
    g.add_argument("--format", choices=("parquet", "tsv", "csv", "nq", "trig"), default="parquet",
                   help="stream file format")
    g.set_defaults(func=cmd_gen_iptv)

    s = subparsers.add_parser("stats", help="what an IPTV stream holds (events, users, sessions, ...)")
    s.add_argument("stream", metavar="STREAM", help="a stream file or directory")
    s.add_argument("--window", default="10s", metavar="DURATION",
                   help="tick period for the refresh-binding counts (default 10s)")
    s.set_defaults(func=cmd_stats)

    u = subparsers.add_parser("usecase", help="run one of the paper's use-cases on the default IPTV data")
    u.add_argument("name", choices=USECASES, help="uc1: viewers per channel, uc2: average viewing time per "
                   "channel, uc3: viewers and viewing time per program")
    u.add_argument("--data", default=DEFAULT_DATA, metavar="DIR",
                   help=f"IPTV data directory, generated with the defaults if absent (default {DEFAULT_DATA})")
    u.add_argument("--engine", choices=("spark", "oracle", "auto"), default=default_engine(),
                   help="the engine that runs the use-case; auto: by the data's size and whether Spark is warm")
    u.add_argument("--format", choices=RESULT_FORMATS, metavar="FMT",
                   help=f"result format: {'|'.join(RESULT_FORMATS)} (default: the one --out's extension names; on a "
                        "terminal a text table, else csv)")
    u.add_argument("--out", metavar="PATH", help="result file, its format named by its extension (default: "
                                                  "standard output)")
    u.add_argument("--metrics", metavar="PATH", help="write the run's metrics (JSON)")
    u.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    u.set_defaults(func=cmd_usecase)


def cmd_gen_iptv(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    cfg = IptvConfig(events=args.events, users=args.users, channels=args.channels, days=args.days, seed=args.seed)
    started = time.perf_counter()
    w = generate(cfg, args.out, epg=args.epg, fmt=args.format)
    secs = time.perf_counter() - started
    print(f"tefq gen iptv: {w.log_events} log events in {len(w.log_files)} files"
          + (f", {w.epg_events} program-guide events in {len(w.epg_files)} files" if args.epg else "")
          + f" under {args.out} ({secs:.2f} s, {w.log_events / max(secs, 1e-9):,.0f} events/s)", file=sys.stderr)
    return 0


def parse_window(text: str) -> int:
    """A duration as `10s`, `500ms`, `1m`, `1h` or ISO `PT10S`, in ms."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h)\s*", text)
    if m:
        return int(m.group(1)) * {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}[m.group(2)]
    m = re.fullmatch(r"\s*PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?\s*", text, re.IGNORECASE)
    if m and any(m.groups()):
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        ms = int(round((h * 3600 + mi * 60 + s) * 1000))
        if ms > 0:
            return ms
    raise TefqError(f"not a duration: '{text}' (expected e.g. 10s, 500ms, 1m, PT10S)", file="--window")


def cmd_stats(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.iptv.stats import load, report

    window = parse_window(args.window)
    if window <= 0:
        raise TefqError("the window must be positive", file="--window")
    lines = report(load(args.stream), window).lines()  # read before printing: a bad stream prints nothing
    print(f"stream               {args.stream}")
    for line in lines:
        print(line)
    return 0


def usecase_file(name: str) -> Path:
    """The use-case document shipped inside the package (tefq.simulate.usecases)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.simulate.usecases import usecase_path

    return Path(usecase_path(name))


def ensure_default_data(data: str) -> None:
    """Generate the paper-sized data set (with program guide) unless `data` already holds one."""
    if os.path.isdir(os.path.join(data, "log")) and os.path.isdir(os.path.join(data, "epg")):
        return
    if os.path.exists(data) and os.listdir(data):
        raise TefqError(f"{data} exists but holds no log/ and epg/ streams: remove it or pass another --data",
                        file="--data")
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    print(f"tefq usecase: generating the default IPTV data into {data} ...", file=sys.stderr)
    generate(IptvConfig(), data, epg=True, fmt="parquet")


def usecase_request(args: argparse.Namespace) -> RunRequest:
    """The run of a use-case (as `tefq run` would describe it): UC1 and UC2 read the log only, UC3
    log and guide."""
    stream = args.data if args.name == "uc3" else os.path.join(args.data, "log")
    return RunRequest(QueryFile(str(usecase_file(args.name))), [stream], engine=args.engine, progress=not args.quiet,
                      output=Output.chosen(args.format, args.out, "tefq usecase", metrics=args.metrics))


def cmd_usecase(args: argparse.Namespace) -> int:
    ensure_default_data(args.data)
    request = usecase_request(args)
    if not args.quiet:
        print(f"tefq usecase: {args.name}: {request.query.path} over {request.events[0]}",
              file=sys.stderr)
    outcome = execute(request)
    if not args.quiet:
        print(outcome.summary(), file=sys.stderr)
    return 0
