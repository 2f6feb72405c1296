"""`tefq compare`: the command line of the baselines comparison (docs/baselines.md)."""
from __future__ import annotations

import argparse
import json
import re
import sys

from tefq import progress
from tefq.errors import TefqError
from tefq.iptv.model import NS as IPTV_NS
from tefq.service import QueryFile, bind, default_engine, prefix_mappings, read_background

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$")
_UNITS = {"ms": 1, "s": 1000, None: 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def parse_windows(text: str) -> list[int]:
    """`10s,100s,200s,400s` (also `500ms`, `1m`, `1h`, bare seconds, or ISO `PT10S`) -> ms."""
    out: list[int] = []
    for part in text.split(","):
        m = _DURATION.match(part)
        if m:
            ms = round(float(m.group(1)) * _UNITS[m.group(2)])
        else:
            try:
                # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
                from tefq.analysis import parse_duration

                ms = parse_duration(part.strip().strip('"'))
            except (ImportError, TefqError):
                raise TefqError(f"'{part.strip()}' is not a duration (e.g. 10s, 500ms, 1m, PT10S)",
                                file="--windows") from None
        if ms <= 0:
            raise TefqError(f"'{part.strip()}' must be positive", file="--windows")
        out.append(ms)
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compare", help="TEF vs simulated-fact baselines: bindings and throughput, table + plots")
    p.add_argument("--usecase", choices=("uc1", "uc2", "uc3"), required=True)
    p.add_argument("--stream", required=True, metavar="DIR",
                   help="a generated data set (tefq gen iptv: DIR/log, DIR/epg) or a stream file/directory")
    p.add_argument("--windows", default="10s,100s,200s,400s", metavar="LIST", help="window sizes (default: %(default)s)")
    p.add_argument("--engine", choices=("oracle", "spark", "auto"), default=default_engine(),
                   help="run TEF and the simulations on the oracle's windowed executor or on Spark; auto: by the "
                        "stream's size and whether Spark is warm (docs/cli.md, 'Choosing the engine')")
    p.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per approach and window (spread)")
    p.add_argument("--approaches", default="tef,refresh,refresh-group,sequence", metavar="LIST",
                   help="which approaches (default: %(default)s; add csparql-query for uc1/uc2: "
                        "usecases/ucN_csparql.rspql on the windowed oracle)")
    p.add_argument("--baseline-query", metavar="FILE", help="csparql-query's queries, in C-SPARQL or RSP-QL"
                   " (default: usecases/<usecase>_csparql.rspql)")
    p.add_argument("--query", metavar="FILE.tef", help="the use-case document (default: usecases/<usecase>.tef)")
    p.add_argument("--prefix", action="append", metavar="p=IRI",
                   help="map a prefix the document does not declare: foo:=IRI, or :=IRI for `:`")
    p.add_argument("--background", metavar="FILE", help="background knowledge (Turtle, N-Triples, TriG)")
    p.add_argument("--t0", type=int, default=0, metavar="MS", help="window origin in ms")
    p.add_argument("--check-oracle", action="store_true",
                   help="also check TEF's rows against the oracle's definition (slow on small windows)")
    p.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    p.add_argument("--plot", metavar="OUT.png", help="draw bindings (log) and throughput per window size")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.compare.measure import compare, read_elements, stream_paths
    from tefq.simulate.usecases import usecase_path

    if args.plot:  # plotting is an optional extra: say so before the long run
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.plotting import check_plot

        check_plot(args.plot)
    windows = parse_windows(args.windows)
    approaches = [a.strip() for a in args.approaches.split(",") if a.strip()]
    prefixes = {"": IPTV_NS, **prefix_mappings(args.prefix)}
    query = QueryFile(args.query or usecase_path(args.usecase), prefixes)
    background = read_background(args.background)
    paths = stream_paths(args.stream, args.usecase)  # bad paths fail before the (slower) parse
    doc = bind(query, background)
    elements = read_elements(paths)
    args.engine = chosen_engine(args.engine, len(elements))
    csparql = None
    if "csparql-query" in approaches:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.simulate.csparql import csparql_path

        csparql = args.baseline_query or csparql_path(args.usecase)
    runs = len(windows) * len(set(approaches) | {"tef"})
    with progress.showing(not args.quiet), progress.bar("tefq compare: runs", runs) as shown:
        ms = compare(doc, elements, windows, approaches, args.repeat, None if background is None else background.triples,
                     args.t0, args.check_oracle, StepShown(shown), engine=args.engine, stream_paths=paths,
                     csparql=csparql)
    return report(ms, args, len(elements))


def chosen_engine(engine: str, events: int) -> str:
    """`--engine auto` resolved by the stream's size (tefq.service.auto_engine); the rows of the
    table's JSON name the engine."""
    if engine != "auto":
        return engine
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.service import auto_engine

    return auto_engine(events).engine


class StepShown:
    """Each approach's run as a step of the bar (a terminal only: the table that follows has every
    figure, so no line is printed twice); rows that differ are said at once."""

    def __init__(self, shown: progress.Bar) -> None:
        self.shown, self.done = shown, 0

    def __call__(self, m) -> None:
        self.done += 1
        self.shown.advance(self.done, f"{m.approach} {m.window_s:g} s done")
        if not m.agrees:
            self.shown.say(f"tefq compare: {m.approach} {m.window_s:g} s: ROWS DIFFER ({m.note})")


def report(ms: list, args: argparse.Namespace, events: int) -> int:
    """The table on stdout, the JSON rows and the figure if asked; exit 1 if an approach's rows
    differ from TEF's."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.compare.measure import format_table

    print(format_table(ms))
    rows = [m.row() for m in ms]
    for r in rows:
        r["usecase"] = args.usecase
        r["engine"] = args.engine
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
            fh.write("\n")
    if args.plot:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.compare.plot import plot

        figure = {"uc1": "Fig. 3 (UC1)", "uc2": "Fig. 4 (UC2)", "uc3": "UC3"}[args.usecase]
        plot(rows, args.plot, f"{figure}: TEF vs simulated facts, {events} events, {args.engine} engine")
    if not all(m.agrees for m in ms):
        print("tefq compare: some approaches' rows differ from TEF's (see the 'agree' column)", file=sys.stderr)
        return 1
    return 0
