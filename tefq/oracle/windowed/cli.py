"""`tefq oracle check` and `tefq oracle table2` (registered by tefq.cli)."""
from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from pathlib import Path

from tefq.errors import TefqError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("oracle", help="check another engine's windowed answers (CSRBench / YABench)")
    sub = p.add_subparsers(dest="oracle_command", metavar="SUBCOMMAND")
    sub.required = True

    c = sub.add_parser("check", help="verdict and per-window metrics for one engine's answers",
                       description="Exit code: 0 when the verdict is PASS, 1 when it is FAIL, 2 for bad input.")
    c.add_argument("--query", required=True, metavar="Q",
                   help="C-SPARQL text (.query/.rspql, `${X}` filled from <stem>.config.json or --config), "
                        "a .tef document, or CSRBench's queries .properties (with --query-number)")
    c.add_argument("--query-number", metavar="N", help="which srb.queryN of a .properties file")
    c.add_argument("--config", metavar="JSON", help="placeholder values ({\"vars\": {...}})")
    c.add_argument("--stream", required=True, metavar="S", help="the input stream (.trig, .stream, tsv, ...)")
    c.add_argument("--answers", required=True, metavar="A.json", help="the engine's answers (CSRBench format)")
    c.add_argument("--system", required=True, metavar="NAME|FILE",
                   help="csparql, cqels, sparqlstream, yabench, default, or a description .properties file")
    c.add_argument("--t0", type=int, metavar="MS", help="t0 (default: the query's first t0, else 0)")
    c.add_argument("--t0-sweep", action="store_true", help="try t0 .. t0+RANGE by the system's time unit")
    c.add_argument("--strict", action="store_true", help="the whole output must equal the oracle's")
    c.add_argument("--gracious", action="store_true", help="shift window borders to explain differences")
    c.add_argument("--csrbench", metavar="DIR", help="where the built-in systems' descriptions are")
    c.add_argument("--json", metavar="OUT", help="write verdict and per-window metrics as JSON")
    c.add_argument("--plot", metavar="OUT.png", help="draw precision/recall and sizes per window")
    c.set_defaults(func=cmd_check)

    t = sub.add_parser("table2", help="CSRBench's Table 2: 7 queries x C-SPARQL, CQELS, SPARQLstream")
    t.add_argument("--csrbench", metavar="DIR", help="the CSRBench material (default: ../shared/external/csrbench)")
    t.add_argument("--queries", choices=("properties", "csparql"), default="properties",
                   help="the static queries file (Q6 at 5 s) or the C-SPARQL texts")
    t.add_argument("--json", metavar="OUT", help="also write every check as JSON")
    t.set_defaults(func=cmd_table2)


def _csrbench_dir(arg: str | None) -> Path:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle.windowed.csrbench import default_dir

    d = Path(arg) if arg else default_dir()
    if not d.is_dir():
        raise TefqError(f"no CSRBench directory at {d} (give --csrbench DIR)", "--csrbench")
    return d


def _system(spec: str, csrbench: str | None):
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle.windowed.secret import DEFAULT, YABENCH, System, resolve_system

    if spec.lower() in ("yabench", "default"):
        return System(spec.lower(), YABENCH if spec.lower() == "yabench" else DEFAULT)
    if Path(spec).is_file():
        return resolve_system(spec, ".")
    return resolve_system(spec, _csrbench_dir(csrbench))


def is_rspql(path: Path) -> bool:
    """An RSP-QL file (told by its content: `FROM NAMED WINDOW`, whatever its extension) goes
    through tefq's parser; other text through the C-SPARQL loader, which fills `${X}` placeholders."""
    try:
        return re.search(r"FROM\s+NAMED\s+WINDOW\b", path.read_text(encoding="utf-8", errors="replace"), re.I) is not None
    except OSError:
        return False


def _query(args: argparse.Namespace):
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle.windowed.query import from_windowed, load_query

    path = Path(args.query)
    if not path.exists():
        raise TefqError(f"no such query file: {path}", str(path))
    if path.suffix == ".tef" or is_rspql(path):
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.analysis import load
        from tefq.plan.logical import WindowedQuery

        doc = load(str(path))
        doc.require_mapped()
        qs = [q for q in doc.queries if isinstance(q, WindowedQuery)]
        if not qs:
            raise TefqError("the document has no windowed query", str(path))
        return from_windowed(qs[0])
    return load_query(path, args.config, args.query_number)


def cmd_check(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle.windowed.answers import read_answers
    from tefq.oracle.windowed.check import check, t0_candidates
    from tefq.oracle.windowed.engine import WindowEvaluator
    from tefq.oracle.windowed.streams import read_elements

    if args.plot:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.plotting import check_plot

        check_plot(args.plot)
    q = _query(args)
    system = _system(args.system, args.csrbench)
    sem = system.semantics_for(q.number)
    if q.r2s != "rstream":  # an RSP-QL REGISTER ISTREAM|DSTREAM names its own R2S
        sem = replace(sem, r2s=q.r2s)
    actual = read_answers(args.answers)
    elements = read_elements(args.stream)
    if len(q.windows) != 1:
        raise TefqError("oracle check handles queries with one window (as CSRBench's oracle does)", args.query)
    t0 = args.t0 if args.t0 is not None else q.t0
    ev = WindowEvaluator(q, elements)
    res = check(ev, sem, actual, t0_candidates(t0, q.range_ms, sem.time_unit_ms, args.t0_sweep),
                strict=args.strict, gracious=args.gracious)
    res.system, res.query = system.name, q.name
    print(f"{system.name} {q.name}: {res.verdict.upper()}  t0={res.t0}"
          + (f"  (matching t0: {_ranges(res.matching_t0s)})" if res.matching_t0s else "")
          + f"  [{sem.r2s}, {_policy(sem)}]")
    print(f"{'window':>17} {'at':>8} {'exp':>5} {'act':>5} {'prec':>6} {'recall':>6} {'delay':>6}"
          + ("  gracious window (prec/recall)" if args.gracious else ""))
    for w in res.windows:
        line = (f"[{w.open:>7},{w.close:>7}) {w.at:>8} {w.expected:>5} {w.actual:>5} {_ratio(w.precision):>6} "
                f"{_ratio(w.recall):>6} {'' if w.delay is None else w.delay:>6}")
        if w.gracious_open is not None:
            line += f"  [{w.gracious_open},{w.gracious_close}) ({_ratio(w.gracious_precision)}/{_ratio(w.gracious_recall)})"
        print(line)
    if args.json:
        _write_json(args.json, res.to_json())
    if args.plot:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.oracle.windowed.plot import plot

        plot(res, args.plot)
    return 0 if res.verdict == "pass" else 1  # CI can gate on the verdict


def _ratio(x: float | None) -> str:
    """A precision or recall; `-` when undefined (nothing answered, or nothing expected)."""
    return "-" if x is None else f"{x:.2f}"


def cmd_table2(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle.windowed.csrbench import render, table2

    results = table2(_csrbench_dir(args.csrbench), args.queries)
    print(render(results))
    if args.json:
        _write_json(args.json, {f"{s}/Q{n}": r.to_json() for (s, n), r in results.items()})
    return 0


def _write_json(path: str, data: dict) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    except OSError as e:
        raise TefqError(f"cannot write: {e.strerror}", path) from None


def _policy(sem) -> str:
    parts = [n for n, on in (("window close", sem.window_close), ("content change", sem.content_change),
                             ("non-empty", sem.non_empty), (f"periodic {sem.periodic_ms} ms", sem.periodic_ms))
             if on]
    return " + ".join(parts)


def _ranges(ts: list[int]) -> str:
    if len(ts) <= 4:
        return ", ".join(map(str, ts))
    return f"{ts[0]}..{ts[-1]} ({len(ts)} values)"

