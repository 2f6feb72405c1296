"""The `tefq` command line (contract: ../shared/spec/CLI-AND-FORMATS.md).

This module only wires options to the library: each command reads its inputs, calls one entry
point (front end, an engine, a generator, the windowed oracle) and writes results. Every bad input
surfaces as a TefqError and leaves with exit code 2 and a located message; anything else is an
internal failure (exit 1).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Sequence

from tefq.errors import TefqError


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or action.required or action.default is argparse.SUPPRESS
                or "default" in text.lower()
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        if action.nargs == 0:  # a flag
            return f"{text} (default: off)".lstrip()
        shown = "none" if action.default is None else "%(default)s"
        return f"{text} (default: {shown})".lstrip()


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is a TefqError (exit 2, one clear line) like every other bad input,
    and every option's help shows its default."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise TefqError(f"{message} (see '{self.prog} --help')", file=self.prog)


# ---------------------------------------------------------------- option helpers
def _prefixes(values: Sequence[str] | None) -> dict[str, str]:
    """`--prefix p=IRI` (also `:=IRI` and `=IRI` for the empty prefix)."""
    out: dict[str, str] = {}
    for v in values or ():
        name, sep, ns = v.partition("=")
        if not sep or not ns:
            raise TefqError(f"--prefix expects p=IRI, got '{v}'", file="--prefix")
        out[name.rstrip(":")] = ns.strip("<>")
    return out


@dataclass(frozen=True)
class StreamArg:
    iri: str | None  # None: feeds every FROM STREAM and every TEF pattern
    path: str


def _stream_arg(value: str) -> StreamArg:
    """`--stream PATH` or `--stream IRI=PATH` (the IRI part has a scheme, or is in angle brackets)."""
    left, sep, right = value.partition("=")
    if sep and right and ("://" in left or (left.startswith("<") and left.endswith(">")) or left.startswith("urn:")):
        return StreamArg(left.strip("<>"), right)
    return StreamArg(None, value)


def _check_paths(streams: Sequence[StreamArg], background: str | None) -> None:
    for s in streams:
        if s.path != "-" and not os.path.exists(s.path):
            raise TefqError(f"no such stream file or directory: {s.path}", file="--stream")
    if background and not os.path.exists(background):
        raise TefqError(f"no such background file: {background}", file="--background")


def _duration_ms(text: str | None, option: str) -> int:
    if text is None:
        return 0
    from tefq.analysis import parse_duration

    try:
        return parse_duration(text)
    except TefqError as e:
        raise TefqError(f"{option}: {e.message}", file=option) from None


# ---------------------------------------------------------------- commands
def _load(args: argparse.Namespace, background_predicates: frozenset[str] = frozenset()):
    from tefq.analysis import load

    return load(args.query, extra_prefixes=_prefixes(args.prefix), background_predicates=background_predicates)


def cmd_parse(args: argparse.Namespace) -> int:
    from tefq.analysis import summary

    doc = _load(args)
    for line in summary(doc):
        print(line)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from tefq.plan.explain import explain

    doc = _load(args)
    text = explain(doc)
    print(text, end="" if text.endswith("\n") else "\n")
    if args.physical and args.simulate:
        from tefq.spark.simulate import explain_simulated

        print(explain_simulated(doc, args.simulate, _duration_ms(args.window, "--window") if args.window else None))
    elif args.physical:
        from tefq.spark import explain_physical

        print(explain_physical(doc))
    return 0


# Options only the Spark engine reads: with --engine oracle they would be silently dropped.
SPARK_ONLY_OPTIONS = ("checkpoint", "master", "max_files_per_trigger", "ingest")


def _check_run_options(args: argparse.Namespace) -> None:
    if args.follow and (args.engine != "spark" or args.simulate):
        raise TefqError("--follow runs on the Spark engine only (a bounded file set: drop --follow)", file="--follow")
    if args.window and not args.simulate:
        raise TefqError("--window only applies with --simulate", file="--window")
    if args.simulate and args.ingest in ("columnar", "direct"):
        raise TefqError(f"--ingest {args.ingest} does not run the simulations (they read rows)", file="--ingest")
    if args.engine == "oracle":
        for name in SPARK_ONLY_OPTIONS:
            if getattr(args, name) is not None:
                option = "--" + name.replace("_", "-")
                raise TefqError(f"{option} applies to the Spark engine only: drop it or use --engine spark",
                                file=option)
    if args.stream.count("-") > 1:
        raise TefqError("standard input can be given once (--stream -)", file="--stream")
    if args.follow and ("-" in args.stream or args.stream_format):
        raise TefqError("--follow watches stream directories as they grow: --stream - and --stream-format "
                        "are for bounded runs", file="--follow")
    if args.checkpoint and ("-" in args.stream or args.stream_format):
        # both are staged in a fresh temporary directory each run: a restart would read them anew
        raise TefqError("--checkpoint resumes over the same stream files: --stream - and --stream-format are "
                        "staged afresh by each run; save the stream as a file named by its format "
                        "(e.g. events.tsv) and pass that", file="--checkpoint")
    if args.format is None:  # people at a terminal get a table, pipes and files get CSV
        args.format = "text" if args.out is None and not args.follow and sys.stdout.isatty() else "csv"
    if args.follow:
        from tefq.io.result_writers import APPENDABLE_FORMATS

        if args.format not in APPENDABLE_FORMATS:
            raise TefqError(f"--follow appends rows as they come: use --format {', '.join(APPENDABLE_FORMATS)}",
                            file="--format")


def _stage(streams: Sequence[StreamArg], fmt: str | None, workdir: str):
    """Stdin and --stream-format inputs staged for the readers (tefq.io.staging)."""
    from tefq.io.staging import StagedStreams, stage_stream

    staged = StagedStreams()
    for s in streams:
        stage_stream(s.path, fmt, workdir, staged)
    return staged


def max_ticks(args: argparse.Namespace) -> int:
    from tefq.oracle.query import DEFAULT_MAX_TICKS

    if args.max_ticks is not None and args.max_ticks < 0:
        raise TefqError("--max-ticks expects a count >= 0 (0: no bound)", file="--max-ticks")
    return DEFAULT_MAX_TICKS if args.max_ticks is None else args.max_ticks


# --engine auto: below this many stream events (estimated) a bounded run goes to the oracle, whose
# whole run beats Spark's start-up there (docs/cli.md, "Choosing the engine").
AUTO_ORACLE_EVENTS = 200_000
TEXT_BYTES_PER_EVENT = 80  # TSV/CSV/N-Quads rows of the IPTV data: ~80-110 bytes


def estimated_events(paths: Sequence[str]) -> int:
    """Stream events, cheaply: Parquet footers' row counts, else bytes / TEXT_BYTES_PER_EVENT."""
    from tefq.io.readers import stream_files

    total = 0
    for path in paths:
        for f in stream_files(path):
            if f.endswith(".parquet"):
                import pyarrow.parquet as pq

                total += pq.ParquetFile(f).metadata.num_rows
            else:
                total += os.path.getsize(f) * (4 if f.endswith(".gz") else 1) // TEXT_BYTES_PER_EVENT
    return total


def choose_engine(args: argparse.Namespace, streams: Sequence[StreamArg]) -> str:
    """`--engine auto`: Spark for what only Spark does (--follow, --checkpoint, --master,
    --max-files-per-trigger, standard input of unknown size) and for large inputs; else the oracle."""
    if args.engine != "auto":
        return args.engine
    spark_only = [getattr(args, n) for n in SPARK_ONLY_OPTIONS] + [args.follow]
    if any(v for v in spark_only) or any(s.path == "-" for s in streams):
        return "spark"
    n = estimated_events([s.path for s in streams])
    engine = "oracle" if n < AUTO_ORACLE_EVENTS else "spark"
    if not args.quiet:
        print(f"tefq: --engine auto: {engine} (about {n:,} events; the oracle below {AUTO_ORACLE_EVENTS:,})",
              file=sys.stderr)
    return engine


def cmd_run(args: argparse.Namespace) -> int:
    streams = [_stream_arg(v) for v in args.stream]
    _check_paths(streams, args.background)
    args.engine = choose_engine(args, streams)
    lateness = _duration_ms(args.lateness, "--lateness")
    window_ms = _duration_ms(args.window, "--window") if args.window else None
    _check_run_options(args)
    with tempfile.TemporaryDirectory(prefix="tefq-stage-") as workdir:
        return _run_staged(args, _stage(streams, args.stream_format, workdir), workdir, lateness, window_ms)


def _run_staged(args: argparse.Namespace, staged, workdir: str, lateness: int, window_ms: int | None) -> int:
    from tefq.io.bad_rows import BadRowLog
    from tefq.io.staging import as_parquet

    background = None
    predicates: frozenset[str] = frozenset()
    if args.background:
        from tefq.io.readers import background_triples, read_background

        background = read_background(args.background)
        predicates = frozenset(p for _, p, _ in background_triples(background))
    doc = _load(args, predicates)

    started = time.perf_counter()
    read_here = BadRowLog(args.bad_rows)  # rows read here for an engine: --simulate's, converted stdin/--stream-format
    if args.simulate and args.engine == "oracle":
        from tefq.simulate import run as simulate_run

        run = simulate_run(doc, list(staged.elements(read_here)), args.simulate, window_ms, background, t0=args.t0,
                           max_ticks=max_ticks(args), locate=staged.locate)
    elif args.simulate:
        from tefq.spark.simulate import run as spark_simulate

        run = spark_simulate(doc, as_parquet(staged, workdir, read_here), args.simulate, window_ms, background, t0=args.t0,
                             lateness_ms=lateness,
                             master=args.master or os.environ.get("TEFQ_SPARK_MASTER"),
                             max_files_per_trigger=args.max_files_per_trigger, bad_rows=args.bad_rows,
                             progress=not args.quiet, max_ticks=max_ticks(args))
    elif args.engine == "oracle":
        from tefq.api import run_oracle

        run = run_oracle(doc, staged, background, t0=args.t0, lateness_ms=lateness, max_ticks=args.max_ticks,
                         bad_rows=args.bad_rows)
    else:
        from tefq.spark import run as spark_run

        run = spark_run(doc, as_parquet(staged, workdir, read_here), background, t0=args.t0, lateness_ms=lateness,
                        master=args.master or os.environ.get("TEFQ_SPARK_MASTER"), checkpoint=args.checkpoint,
                        follow=args.follow, max_files_per_trigger=args.max_files_per_trigger,
                        bad_rows=args.bad_rows, progress=not args.quiet, max_ticks=max_ticks(args),
                        ingest=args.ingest or "auto",
                        on_rows=_Appender(args.format, args.out, args.tick_format) if args.follow else None)
    read_here.close()
    run.metrics.extra["bad_rows"] = run.metrics.extra.get("bad_rows", 0) + read_here.count
    run.metrics.wall_seconds = round(time.perf_counter() - started, 3)
    if not args.follow:  # follow mode hands its rows on as they come and counts them
        run.metrics.rows_out = sum(len(r.rows) for r in run.results)

    from tefq.io.result_writers import write_metrics, write_results

    if not args.follow:  # follow mode appended its rows as they came
        write_results(run.results, args.format, args.out, args.tick_format)
    if args.metrics:
        write_metrics(run.metrics, args.metrics)
    if not args.quiet:
        m = run.metrics
        print(f"tefq: {m.events_in} events, {m.ticks} ticks, {m.rows_out} rows, facts created {m.facts_created}, "
              f"closed {m.facts_closed}, late {m.late_events}, {m.wall_seconds:.2f} s ({args.engine})", file=sys.stderr)
    return 0


class _Appender:
    """Follow mode's output: each micro-batch's new rows are appended to --out (or stdout) and
    flushed, in the format a bounded run writes (one header, at the top). The file is rewritten
    from the start of the run: a run resumed from --checkpoint hands over every committed tick
    again, so the file always holds each reported tick once."""

    def __init__(self, fmt: str, out: str | None, tick_format: str = "ms") -> None:
        from tefq.io.result_writers import is_directory_target

        self.fmt, self.out, self.tick_format = fmt, out, tick_format
        self.per_query = is_directory_target(out)
        self.started: set[str] = set()
        if out is not None and not self.per_query:  # no stale rows from an earlier run
            try:
                open(out, "w", encoding="utf-8").close()
            except OSError as e:
                raise TefqError(f"cannot write the output: {e.strerror or e}", out) from None

    def __call__(self, results) -> None:
        if self.per_query:
            from tefq.io.result_writers import result_path

            for r in results:
                if r.rows:
                    self._append(result_path(self.out, r.name, self.fmt), [r])
        else:
            self._append(self.out, results)

    def _append(self, path: str | None, results) -> None:
        from tefq.io.result_writers import results_text

        text = results_text(results, self.fmt, self.tick_format)
        key = path or "-"
        if key in self.started and self.fmt != "jsonl":
            text = text.split("\n", 1)[1] if "\n" in text else ""  # the header is written once
        if path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            try:
                if self.per_query:
                    os.makedirs(self.out, exist_ok=True)
                with open(path, "a" if key in self.started else "w", encoding="utf-8", newline="") as fh:
                    fh.write(text)
            except OSError as e:
                raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
        self.started.add(key)


# ---------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    from tefq.io.readers import STREAM_FORMATS
    from tefq.io.result_writers import FORMATS as RESULT_FORMATS

    parser = _Parser(prog="tefq", description="Temporal fact/event stream processing with TEF-SPARQL.")
    parser.add_argument("--version", action="version", version=f"tefq {__import__('tefq').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def with_query(p: argparse.ArgumentParser) -> None:
        p.add_argument("query", metavar="FILE.tef", help="a TEF-SPARQL document")
        p.add_argument("--prefix", action="append", metavar="p=IRI", help="map a prefix the document does not declare")

    p = sub.add_parser("parse", help="check syntax and binding; one summary line per statement")
    with_query(p)
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("explain", help="print the logical plan (and with --physical the Spark plan)")
    with_query(p)
    p.add_argument("--physical", action="store_true", help="also show the Spark physical plan and partitioning")
    p.add_argument("--simulate", choices=("refresh", "refresh-group", "sequence"),
                   help="with --physical: the Spark plan of that simulation")
    p.add_argument("--window", metavar="DURATION", help="with --simulate: the window (default: the query's EVERY)")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("run", help="run a document over streams")
    with_query(p)
    p.add_argument("--stream", action="append", required=True, metavar="[IRI=]PATH",
                   help="a stream file or directory, or - for standard input; IRI=PATH feeds FROM STREAM <IRI> only")
    p.add_argument("--stream-format", choices=STREAM_FORMATS, metavar="FMT",
                   help=f"read every --stream as {'|'.join(STREAM_FORMATS)} whatever its extension "
                        "(default: by extension; tsv for standard input)")
    p.add_argument("--background", metavar="FILE", help="background knowledge (Turtle, N-Triples, TriG)")
    p.add_argument("--engine", choices=("spark", "oracle", "auto"), default="spark",
                   help="the engine that runs the document; auto: the oracle for small bounded inputs, "
                        "else Spark (docs/cli.md)")
    p.add_argument("--format", choices=RESULT_FORMATS, metavar="FMT",
                   help=f"result format: {'|'.join(RESULT_FORMATS)} (default: text on a terminal, else csv)")
    p.add_argument("--tick-format", choices=("ms", "iso"), default="ms",
                   help="ticks as integer ms or as xsd:dateTime (parquet/arrow: always a timestamp)")
    p.add_argument("--out", metavar="PATH", help="result file, or a directory for one file per query "
                                                  "(default: standard output)")
    p.add_argument("--metrics", metavar="PATH", help="write the run's metrics (JSON)")
    p.add_argument("--t0", type=int, default=0, metavar="MS", help="tick origin in ms (ticks are t0 + k*EVERY)")
    p.add_argument("--lateness", metavar="DURATION",
                   help="allowed lateness, e.g. 5s (default: 0; oracle: each stream file arrives as one batch)")
    p.add_argument("--max-ticks", type=int, metavar="N",
                   help="stop (exit 2, naming the row) if a query would report rows at more than N ticks "
                        "(default 1000000; 0: no bound; Spark counts every tick from the first event to the last)")
    p.add_argument("--simulate", choices=("refresh", "refresh-group", "sequence"),
                   help="run a simulated baseline instead of TEF (see docs/cli.md)")
    p.add_argument("--window", metavar="DURATION", help="simulation window (default: the query's EVERY)")
    p.add_argument("--master", metavar="URL", help="Spark master (default: TEFQ_SPARK_MASTER or local[*])")
    p.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint directory (restart without loss)")
    p.add_argument("--follow", action="store_true", help="keep watching the stream directory")
    p.add_argument("--max-files-per-trigger", type=int, metavar="N", help="Spark micro-batch size in files")
    p.add_argument("--bad-rows", metavar="DIR", help="write malformed rows here instead of stopping")
    p.add_argument("--ingest", choices=("auto", "columnar", "direct", "rows"),
                   help="Spark: how Parquet inputs are read; auto: direct (each bucket's operator reads the files "
                        "with pyarrow) for CURRENT and fact aggregates over Parquet files in a bounded run, else rows; "
                        "columnar: each map task reads its files (docs/cli.md) (default: auto)")
    p.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.set_defaults(func=cmd_run)

    for register in _optional_commands():
        register(sub)
    return parser


def _optional_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Commands that live with their subsystem (generator, windowed oracle)."""
    found = []
    for module in ("tefq.iptv.cli", "tefq.oracle.windowed.cli", "tefq.simulate.cli"):
        try:
            found.append(__import__(module, fromlist=["register"]).register)
        except ImportError:
            continue
    return found


def run_command(argv: Sequence[str]) -> int:
    """Run one tefq command line; returns the exit code (0 ok, 2 bad input, 1 internal failure)."""
    try:
        args = build_parser().parse_args(list(argv))
        return int(args.func(args) or 0)
    except TefqError as e:
        print(e.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tefq: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # an internal failure: say so plainly, with the trace only on request
        if interrupted(e):  # py4j failed while a Ctrl-C cut its call short
            print("tefq: interrupted", file=sys.stderr)
            return 130
        print(f"tefq: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("TEFQ_DEBUG"):
            traceback.print_exc()
        else:
            print("tefq: set TEFQ_DEBUG=1 to see the traceback", file=sys.stderr)
        return 1


def interrupted(e: BaseException) -> bool:
    """Whether `e` was raised while handling a KeyboardInterrupt (its context chain holds one)."""
    seen = e.__context__
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread; a BaseException so no `except Exception` swallows it."""


def main() -> None:
    """The `tefq` entry point. SIGTERM and SIGINT stop any run cleanly: a message on stderr, the
    temporary directories of tefq.cleanup removed, exit 143 / 130, no traceback."""
    import logging
    import signal

    from tefq import cleanup

    def terminate(signum, frame) -> None:
        raise _Terminated()

    signal.signal(signal.SIGTERM, terminate)
    # py4j logs a call cut short by a signal with logging.exception on the root logger, which would
    # print a traceback: the command line says what happened itself.
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        code = run_command(sys.argv[1:])
    except _Terminated:
        print("tefq: terminated by SIGTERM: the run stopped, temporary files removed", file=sys.stderr)
        code = 143
    except KeyboardInterrupt:  # SIGINT outside run_command's own handler
        print("tefq: interrupted", file=sys.stderr)
        code = 130
    finally:
        for s in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the clean-up short
            signal.signal(s, signal.SIG_IGN)
        cleanup.remove_all()
    sys.exit(code)


if __name__ == "__main__":
    main()
