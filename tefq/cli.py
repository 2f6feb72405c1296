"""The `tefq` command line (contract: ../shared/spec/CLI-AND-FORMATS.md).

This module parses options and prints: `tefq run` describes its run as a `tefq.service.RunRequest`
and the run service does the rest; `parse` and `explain` bind the document and print it; the
other commands are registered by their subsystems (`SUBSYSTEM_COMMANDS`). Every bad input
surfaces as a TefqError and leaves with exit code 2 and a located message; anything else is an
internal failure (exit 1).
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import traceback
from typing import Sequence

from tefq import __version__
from tefq.analysis.durations import duration_ms
from tefq.compare.cli import register as register_compare
from tefq.errors import SPARK_MISSING, TOO_DEEP, TefqError, failure_message, is_refusal, spark_missing, too_deep
from tefq.facts.cli import register as register_facts, run_as_of
from tefq.io.paths import stream_arg
from tefq.io.readers import STREAM_FORMATS
from tefq.io.result_writers import FORMATS as RESULT_FORMATS
from tefq.iptv.cli import register as register_iptv
from tefq.oracle.windowed.cli import register as register_oracle
from tefq.publish import register as register_publish
from tefq.results import TERM_FORMS
from tefq.service import (ENGINES, STDIN, Output, QueryFile, QueryText, RunRequest, SparkOptions, default_engine,
                          execute, prefix_mappings, query_source)
from tefq.sensors.cli import register as register_sensors
from tefq.server.cli import register as register_server
from tefq.simulate.names import STRATEGIES
from tefq.spark.runtime.session_source import REMOTE_HELP, named_master

# The commands that live with their subsystem (generator, windowed oracle, baselines comparison).
SUBSYSTEM_COMMANDS = (register_iptv, register_sensors, register_oracle, register_compare, register_facts,
                      register_publish, register_server)


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
def _query_file(args: argparse.Namespace) -> QueryFile | QueryText:
    """The document: FILE.tef, `-` (standard input; then the events cannot come from there too) or -e TEXT."""
    streams = [stream_arg(v).path for v in getattr(args, "stream", None) or ()]
    if args.query == STDIN and STDIN in streams:
        raise TefqError("standard input holds either the query (tefq run -) or the events (--stream -), not "
                        "both: give the query as a file or with -e TEXT", file="--stream")
    return query_source(args.query, args.expression, prefix_mappings(args.prefix))


def _spark_conf(values: Sequence[str] | None) -> tuple[tuple[str, str], ...] | None:
    """`--conf KEY=VALUE` values (None: none given)."""
    if not values:
        return None
    pairs = []
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise TefqError(f"--conf expects KEY=VALUE (a Spark setting, e.g. spark.sql.shuffle.partitions=4), "
                            f"got '{v}'", file="--conf")
        pairs.append((key.strip(), value))
    return tuple(pairs)


def _memory(value: str) -> str:
    """`--driver-memory` as Spark writes sizes: 2g, 512m, 4096 (MiB)."""
    if not re.fullmatch(r"[0-9]+[kmgt]?", value.strip().lower()):
        raise argparse.ArgumentTypeError(f"expects a size such as 2g or 512m, got '{value}'")
    return value.strip().lower()


# ---------------------------------------------------------------- commands
def cmd_parse(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.analysis import summary
    from tefq.analysis.bind import undeclared_prefix

    doc = _query_file(args).document()
    for line in summary(doc):
        print(line)
    if doc.unmapped is not None:  # spec §1: it parses as printed; a run needs the prefix mapped
        e = doc.unmapped
        print(TefqError(undeclared_prefix("", why="to run the document, "),
                        e.file, e.line, e.column, kind="note").render(), file=sys.stderr)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.plan.explain import explain

    doc = _query_file(args).document()
    text = explain(doc)
    print(text, end="" if text.endswith("\n") else "\n")
    if args.physical and args.simulate:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.simulate import explain_simulated

        print(explain_simulated(doc, args.simulate, duration_ms(args.window, "--window") if args.window else None))
    elif args.physical:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark import explain_physical

        print(explain_physical(doc))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.at is not None or args.facts is not None:  # spec §12: as of given instants (oracle)
        args.stream = [stream_arg(v).path for v in args.stream or ()]
        return run_as_of(args, _output(args))
    if not args.stream and args.query is None and args.expression is None:  # both missing: say both
        raise TefqError("tefq run needs a query and its events: tefq run FILE.tef --stream PATH (the query "
                        "may also be - or -e TEXT; see 'tefq run --help')", file="tefq run")
    if not args.stream:
        raise TefqError("tefq run needs --stream PATH (or --facts FILE with --at)", file="--stream")
    outcome = execute(run_request(args))
    if not args.quiet:
        print(outcome.summary(), file=sys.stderr)
    return 0


def run_request(args: argparse.Namespace) -> RunRequest:
    """The run `tefq run` describes (tefq.service does it)."""
    spark = SparkOptions(master=named_master(args.master, args.remote), checkpoint=args.checkpoint,
                         max_files_per_trigger=args.max_files_per_trigger, ingest=args.ingest, follow=args.follow,
                         join_order=args.join_order, idle_timeout=args.idle_timeout, conf=_spark_conf(args.conf),
                         driver_memory=args.driver_memory,
                         accept_gaps=True if getattr(args, "accept_gaps", False) else None)
    streams = [stream_arg(v) for v in args.stream]
    return RunRequest(_query_file(args), [s.path for s in streams], args.stream_format,
                      args.background, args.engine, args.t0, args.lateness, args.max_ticks, args.simulate,
                      args.window, args.bad_rows, progress=not args.quiet, spark=spark, output=_output(args),
                      stream_iris=tuple(s.iri for s in streams))


def _output(args: argparse.Namespace) -> Output:
    """People at a terminal get a table, pipes CSV, files the format their extension names."""
    return Output.chosen(args.format, args.out, "tefq run", tick_format=args.tick_format, metrics=args.metrics,
                         terms=args.terms, follow=args.follow)


# ---------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tefq", description="Temporal fact/event stream processing with TEF-SPARQL.",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"tefq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    _add_document_commands(sub)
    _add_run_command(sub)
    for register in SUBSYSTEM_COMMANDS:
        register(sub)
    _add_completion_command(sub)
    return parser


EPILOG = """first steps:
  tefq run examples/spec10/uc1.tef --stream examples/spec10/events.tsv     viewers per channel every 5 s
  tefq run - --stream events.tsv < query.tef         the query from standard input (or -e TEXT)
  tefq COMMAND --help                                a command's options
  the language: docs/language.md; every option: docs/cli.md"""


def _add_completion_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh)",
                       description="e.g.  tefq completion bash > ~/.local/share/bash-completion/completions/tefq")
    p.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    p.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    print(shtab.complete(build_parser(), shell=args.shell))
    return 0


def _with_query(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="FILE.tef", nargs="?",
                   help="a TEF-SPARQL document (.tef, .rspql); - reads it from standard input")
    p.add_argument("-e", "--expression", metavar="TEXT", help="the document as text instead of a file")
    p.add_argument("--prefix", action="append", metavar="p=IRI",
                   help="map a prefix the document does not declare: foo:=IRI, or :=IRI for `:`")


def _add_document_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("parse", help="check syntax and binding; one summary line per statement")
    _with_query(p)
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("explain", help="print the logical plan (and with --physical the Spark plan)")
    _with_query(p)
    p.add_argument("--physical", action="store_true", help="also show the Spark physical plan and partitioning")
    p.add_argument("--simulate", choices=STRATEGIES, help="with --physical: the Spark plan of that simulation")
    p.add_argument("--window", metavar="DURATION", help="with --simulate: the window (default: the query's EVERY)")
    p.set_defaults(func=cmd_explain)


def _add_run_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a document over streams")
    _with_query(p)
    p.add_argument("--stream", action="append", metavar="[IRI=]PATH",
                   help="a stream file or directory, a Redis stream redis://HOST:PORT/KEY, or - for standard "
                        "input; IRI=PATH feeds FROM STREAM <IRI> only")
    p.add_argument("--stream-format", choices=STREAM_FORMATS, metavar="FMT",
                   help=f"read every --stream as {'|'.join(STREAM_FORMATS)} whatever its extension "
                        "(default: by extension; tsv for standard input)")
    p.add_argument("--background", metavar="FILE", help="background knowledge (Turtle, N-Triples, TriG)")
    p.add_argument("--engine", choices=ENGINES, default=default_engine(),
                   help="the engine that runs the document; auto: the oracle for small bounded inputs (smaller "
                        "still when Spark is warm), else Spark; the summary line says which and why (docs/cli.md)")
    _add_output_options(p)
    p.add_argument("--t0", type=int, default=0, metavar="MS", help="tick origin in ms (ticks are t0 + k*EVERY)")
    p.add_argument("--lateness", metavar="DURATION",
                   help="allowed lateness, e.g. 5s (default: 0; oracle: each stream file arrives as one batch)")
    p.add_argument("--max-ticks", type=int, metavar="N",
                   help="stop (exit 2, naming the row) if a query would report rows at more than N ticks "
                        "(default 1000000; 0: no bound; Spark counts every tick from the first event to the last)")
    p.add_argument("--simulate", choices=STRATEGIES, help="run a simulated baseline instead of TEF (see docs/cli.md)")
    p.add_argument("--window", metavar="DURATION", help="simulation window (default: the query's EVERY)")
    _add_spark_options(p)
    p.add_argument("--join-order", choices=("static", "adaptive"),
                   help="Spark, windowed queries: BGP join order, Strider's static heuristic or adaptive (exact "
                        "per-window cardinalities, forward/backward) (docs/spark-windowed.md) (default: adaptive)")
    p.add_argument("--bad-rows", metavar="DIR", help="write malformed rows here instead of stopping")
    p.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    p.add_argument("--facts", metavar="FILE",
                   help="a stored fact table (tefq facts --out FILE): with --at, no event is replayed")
    p.add_argument("--at", metavar="T[,T...]",
                   help="report the aggregate queries only at these instants (ms or xsd:dateTime; the oracle)")
    p.set_defaults(func=cmd_run)


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=RESULT_FORMATS, metavar="FMT",
                   help=f"result format: {'|'.join(RESULT_FORMATS)} (default: the one --out's extension names; "
                        "on a terminal a text table, else csv)")
    p.add_argument("--tick-format", choices=("ms", "iso"),
                   help="ticks as integer ms or as ISO-8601 xsd:dateTime (default: iso in the text table, else ms; "
                        "parquet/arrow: always a timestamp)")
    p.add_argument("--out", metavar="PATH", help="result file, its format named by its extension (res.parquet), "
                                                  "or a directory for one file per query (default: standard output)")
    p.add_argument("--metrics", metavar="PATH", help="write the run's metrics (JSON)")
    p.add_argument("--terms", choices=TERM_FORMS,
                   help="parquet/arrow cells: typed columns (counts long, sums and averages double, IRIs without "
                        "brackets; docs/formats.md) or N-Triples strings (default: typed)")


def _add_spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", metavar="URL", help="Spark master (default: TEFQ_SPARK_MASTER or local[*])")
    p.add_argument("--remote", metavar="URL", help=REMOTE_HELP)
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="a Spark setting for the session the run starts, as spark-submit takes it (repeatable)")
    p.add_argument("--driver-memory", type=_memory, metavar="SIZE",
                   help="the Spark driver's memory, e.g. 4g (default: TEFQ_SPARK_DRIVER_MEMORY or 2g)")
    p.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint directory (restart without loss)")
    p.add_argument("--follow", action="store_true", help="keep watching the stream directories and Redis streams")
    p.add_argument("--idle-timeout", metavar="DURATION",
                   help="--follow: a stream silent this long stops holding the event time back (spec §6.1; "
                        "default 10s; 0: never)")
    p.add_argument("--accept-gaps", action="store_true",
                   help="Redis: read on when entries were removed from a stream (XTRIM, MAXLEN) before tefq read "
                        "them (default: exit 2 naming how many and their IDs)")
    p.add_argument("--max-files-per-trigger", type=int, metavar="N", help="Spark micro-batch size in files (default: a bounded run reads about 2M events a micro-batch)")
    p.add_argument("--ingest", choices=("auto", "columnar", "direct", "rows"),
                   help="Spark: how stream inputs are read; auto: direct (each bucket's operator reads the files "
                        "with pyarrow) for every planned aggregate and windowed query over Parquet files or over "
                        "Redis streams alone, bounded or --follow, else rows (the fallback, Redis beside files); "
                        "columnar: each map task reads its files (docs/cli.md) (default: auto)")


def run_command(argv: Sequence[str], signals: "ReceivedSignals | None" = None) -> int:
    """Run one tefq command line; returns the exit code (0 ok, 2 bad input, 1 internal failure,
    130/143 stopped by a signal: `signals` tells which one arrived, see `stopped`)."""
    try:
        parser = build_parser()
        if not argv:  # bare `tefq`: what it can do, not an error
            parser.print_help()
            return 0
        args = parser.parse_args(list(argv))
        return int(args.func(args) or 0)
    except TefqError as e:
        print(e.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return stopped(signals)
    except BrokenPipeError:
        return 0
    except MemoryError:  # said below, once the failed run's frames (and their memory) are freed
        pass
    except Exception as e:  # an internal failure: say so plainly, with the trace only on request
        if interrupted(e):  # py4j failed while a Ctrl-C cut its call short
            return stopped(signals)
        if too_deep(e):  # nested past the parser's checks (tefq.syntax.nesting), here or in a worker
            print(f"tefq: error: {TOO_DEEP}", file=sys.stderr)
            return 2
        if spark_missing(e):  # an oracle-only install asked for Spark (tefq facts, run --at, ...)
            print(TefqError(SPARK_MISSING, file="--engine").render(), file=sys.stderr)
            return 2
        print(failure_message(e, argv), file=sys.stderr)  # tefq.errors: a full disk, a dead JVM, else one line
        if is_refusal(e):  # a Spark worker refused what it read (a checkpoint's state): bad input
            return 2
        if os.environ.get("TEFQ_DEBUG"):
            traceback.print_exc()
        else:
            print("tefq: set TEFQ_DEBUG=1 to see the traceback", file=sys.stderr)
        return 1
    # only the MemoryError branch gets here
    print("tefq: out of memory: the run needed more memory than this machine (or its ulimit) allows; "
          "for large inputs use --engine spark, for a wide time range check --max-ticks", file=sys.stderr)
    return 1


def stopped(signals: "ReceivedSignals | None") -> int:
    """A run stopped by a signal: exit 143 if SIGTERM came (however often, whichever handler was
    installed then: the follow loop stops after its micro-batch on the first signal and turns a
    second one into KeyboardInterrupt), else 130 (SIGINT)."""
    import signal

    if signals is not None and signal.SIGTERM in signals.received():
        print(TERMINATED, file=sys.stderr)
        return 143
    print("tefq: interrupted", file=sys.stderr)
    return 130


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


TERMINATED = "tefq: terminated by SIGTERM: the run stopped, temporary files removed"


class ReceivedSignals:
    """Which signals arrived during the run, whatever Python handler was installed at the time:
    the interpreter writes every handled signal's number to a wakeup descriptor (main thread)."""

    def __init__(self) -> None:
        import signal

        self.read_fd, self.write_fd = os.pipe()
        for fd in (self.read_fd, self.write_fd):
            os.set_blocking(fd, False)
        self.previous = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.seen: set[int] = set()

    def received(self) -> set[int]:
        while True:
            try:
                data = os.read(self.read_fd, 512)
            except BlockingIOError:
                return self.seen
            if not data:
                return self.seen
            self.seen.update(data)

    def close(self) -> None:
        import signal

        signal.set_wakeup_fd(self.previous)
        os.close(self.read_fd)
        os.close(self.write_fd)


def main() -> None:
    """The `tefq` entry point. SIGTERM and SIGINT stop any run cleanly: a message on stderr, the
    temporary directories of tefq.cleanup removed, exit 143 / 130, no traceback."""
    import logging
    import signal

    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq import cleanup
    from tefq.stopping import raise_later, this_process_only

    def terminate(signum, frame) -> None:
        if not raise_later(signum, frame):
            raise _Terminated()

    signal.signal(signal.SIGTERM, this_process_only(terminate))
    signals = ReceivedSignals()
    # py4j logs a call cut short by a signal with logging.exception on the root logger, which would
    # print a traceback: the command line says what happened itself.
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        code = run_command(sys.argv[1:], signals)
        if code == 0 and signals.received() & {signal.SIGINT, signal.SIGTERM}:
            code = stopped(signals)  # follow mode stopped after its micro-batch: still 143 / 130
    except _Terminated:
        print(TERMINATED, file=sys.stderr)
        code = 143
    except KeyboardInterrupt:  # SIGINT (or a follow loop's second signal) outside run_command
        code = stopped(signals)
    finally:
        for s in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the clean-up short
            signal.signal(s, signal.SIG_IGN)
        cleanup.remove_all()
        signals.close()
    # The interpreter's shutdown runs the cyclic collector over every object still alive (pandas,
    # pyarrow, pyspark, a run's leftovers); it leaves frozen objects alone, and an object outside a
    # cycle is still released (a file flushed and closed) as its last reference goes. From the
    # summary line to the exit, 4 alternated pairs on both engines: 0.26-1.96 s before, 0.07-0.53 s
    # frozen (docs/bench/2026-11-30-exit-and-stops.md).
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    main()
