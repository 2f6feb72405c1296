"""`tefq facts FILE.tef (--stream PATH | --facts FILE) [--out FILE|DIR/] [--format ...] [--plot FILE.png]`:
the fact table of spec §12, and its timeline (`--follow`: live, `tefq.facts.live`); and `run_as_of`,
what `tefq run ... --at T` does (spec §12), kept here so the run command only has to hand it the
arguments."""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

from tefq.errors import TefqError
from tefq.facts.api import chosen_engine
from tefq.facts.plot import MAX_ROWS, SCREEN_ROWS
from tefq.facts.writer import FACT_FORMATS
from tefq.io.atomic import check_writable
from tefq.io.result_writers import is_directory_target
from tefq.service import default_engine
from tefq.spark.runtime.session_source import REMOTE_HELP, named_master

if TYPE_CHECKING:
    from tefq.service import Output


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "facts", help="the fact table (one row per maximal interval of every fact) and a timeline",
        description="Writes the document's facts, event-driven and derived, one row per maximal interval: "
                    "fact, identity columns, start, end (ms; end empty while open); both engines give the "
                    "same table (spec §12).")
    p.add_argument("query", metavar="FILE.tef", help="a TEF-SPARQL document")
    p.add_argument("--prefix", action="append", metavar="p=IRI",
                   help="map a prefix the document does not declare: foo:=IRI, or :=IRI for `:`")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--stream", action="append", metavar="PATH", help="stream file or directory (repeatable)")
    source.add_argument("--facts", metavar="FILE", help="a stored fact table (.parquet, .tsv, .jsonl) to plot or convert")
    p.add_argument("--background", metavar="FILE", help="background knowledge (Turtle, N-Triples, TriG)")
    p.add_argument("--out", metavar="FILE|DIR/", help="output file, or a directory for one file per fact (default: stdout)")
    p.add_argument("--format", choices=FACT_FORMATS,
                   help="table format (default: the one --out's extension names; on a terminal a text table with "
                        "ISO-8601 times, else csv)")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the timeline: a row per identity, a bar per interval")
    p.add_argument("--where", action="append", metavar="var=TERM",
                   help="keep the facts whose identity binds ?var to this term: <iri>, a prefixed name of the "
                        "document (channel=:ch42) or a literal (repeatable; table and plot)")
    p.add_argument("--limit", type=int, default=SCREEN_ROWS, metavar="N",
                   help=f"--plot: the first N identities to start (default {SCREEN_ROWS}, a screen's worth; "
                        f"at most {MAX_ROWS})")
    add_engine_options(p)
    p.add_argument("--follow", action="store_true",
                   help="keep watching the --stream directories (or Redis streams) on Spark until SIGINT/SIGTERM: "
                        "closed facts are appended to --out as they close, the facts open at the last reported "
                        "tick rewritten in OUT.open.EXT (csv, tsv, jsonl)")
    p.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    p.set_defaults(func=cmd_facts)


def add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=("spark", "oracle", "auto"), default=default_engine(),
                   help="the engine that computes the facts (default auto: the oracle for small bounded inputs, "
                        "else Spark; both give the same table)")
    p.add_argument("--master", metavar="URL", help="Spark master (default: TEFQ_SPARK_MASTER or local[*])")
    p.add_argument("--remote", metavar="URL", help=REMOTE_HELP)


def _master(args: argparse.Namespace) -> str | None:
    return named_master(getattr(args, "master", None), getattr(args, "remote", None))


def _document(args: argparse.Namespace):
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.service import QueryFile, bind, prefix_mappings, read_background

    background = read_background(args.background)
    return bind(QueryFile(args.query, prefix_mappings(args.prefix)), background), background


def _elements(paths: list[str]) -> list:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.readers import read_stream

    return [e for path in paths for e in read_stream(path)]


def cmd_facts(args: argparse.Namespace) -> int:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.plot import check_limit, keep, parse_where, plot_timeline
    from tefq.facts.reader import read_fact_store
    from tefq.facts.table import store_rows
    from tefq.facts.writer import format_of, write_facts
    from tefq.plotting import check_plot

    started = time.perf_counter()
    fmt = format_of(args.format, args.out, follow=args.follow)
    check_writable(args.out, "--out", is_directory_target(args.out))
    doc, background = _document(args)
    where = parse_where(args.where, dict(doc.prefixes))  # `channel=:ch42`: the document's prefixes
    if args.follow:
        return follow_facts(args, fmt, where, started, doc, background)
    if args.plot:  # before the run, not after it
        check_plot(args.plot)
        check_limit(args.limit)
    engine = "stored table"
    if args.facts:
        table = store_rows(doc, read_fact_store(args.facts, doc))
    else:
        table, engine = _stream_table(args, doc, background)
    if where:
        table = keep(table, where)
    write_facts(table, fmt, args.out)
    shown = plot_timeline(table, args.plot, os.path.basename(args.query), args.limit) if args.plot else 0
    if not args.quiet:
        open_ = sum(1 for r in table.rows if r.end is None)
        plot = f", timeline of {shown} identities in {args.plot}" if args.plot else ""
        print(f"tefq facts: {len(table.rows)} intervals ({open_} open){plot}, "
              f"{time.perf_counter() - started:.2f} s ({engine})", file=sys.stderr)
    return 0


def _stream_table(args: argparse.Namespace, doc, background):
    """The fact table over `--stream`, on the engine `--engine` names; (table, engine that ran)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.table import fact_table

    choice = chosen_engine(getattr(args, "engine", "oracle"), args.stream, _master(args))
    if choice.engine == "oracle":
        return fact_table(doc, _elements(args.stream), background), choice.label()
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.spark import spark_fact_table

    table, engine = spark_fact_table(doc, args.stream, background, master=_master(args),
                                     progress=not args.quiet)
    return table, choice.label() if choice.why else engine


def follow_facts(args: argparse.Namespace, fmt: str, where: list[tuple[str, str]], started: float, doc,
                 background) -> int:
    """`tefq facts ... --stream PATH --follow`: the live fact table (`tefq.facts.live`), on Spark."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.live import LiveFactWriter, follow_fact_table, open_snapshot_path
    from tefq.service import STDIN

    if args.facts:
        raise TefqError("--follow watches --stream inputs: a stored fact table (--facts) does not grow", "--follow")
    if args.plot:
        raise TefqError("--plot draws a bounded table: run tefq facts without --follow, or with --facts on "
                        "the table --follow wrote", "--plot")
    if args.engine == "oracle":
        raise TefqError("--follow runs on the Spark engine only (the oracle reads a bounded input)", "--engine")
    if STDIN in args.stream:
        raise TefqError("--follow watches stream directories and Redis streams as they grow: --stream - is for "
                        "bounded runs", "--follow")
    if args.out is not None:
        check_writable(open_snapshot_path(args.out), "--out")
    writer = LiveFactWriter(doc, fmt, args.out, where)
    metrics = follow_fact_table(doc, args.stream, background, writer, master=_master(args), progress=not args.quiet)
    if not args.quiet:
        snapshot = f" in {open_snapshot_path(args.out)}" if args.out else ""
        print(f"tefq facts --follow: {writer.closed_rows} closed intervals appended, {writer.open_rows} open at the "
              f"last reported tick{snapshot}, {len(metrics.get('micro_batches', ()))} micro-batches, "
              f"{time.perf_counter() - started:.2f} s (spark)", file=sys.stderr)
    return 0


def run_as_of(args: argparse.Namespace, output: "Output | None" = None) -> int:
    """`tefq run FILE.tef (--stream PATH | --facts FILE) --at T[,T...]`: the aggregate queries at
    the given instants, from the stream (its facts from the engine `engine` names: Spark's fact
    table, or the oracle's replay) or from a stored fact table (spec §12), written to `output`.
    Reads `query`, `prefix`, `background`, `stream`, `facts`, `at`, `quiet`, and if present
    `engine` (default oracle) and `master` (and without `output`, `format`, `out` and `metrics`)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.as_of import as_of_facts, as_of_spark, as_of_stream, parse_instants, visible_text
    from tefq.facts.reader import stored_rows
    from tefq.progress import plural
    from tefq.io.result_writers import write_metrics, write_results
    from tefq.service import Output, plan_kinds

    if args.at is None:
        raise TefqError("--facts FILE runs the queries as of given instants: add --at T[,T...]", "--facts")
    instants = parse_instants(args.at)
    if output is None:
        output = Output.chosen(getattr(args, "format", None), args.out, "tefq run", metrics=getattr(args, "metrics", None))
    check_writable(output.out, "--out", is_directory_target(output.out))
    check_writable(output.metrics, "--metrics")
    if getattr(args, "follow", False):
        raise TefqError("--at reports given instants of a bounded input: it does not follow a stream", "--follow")
    if bool(args.facts) == bool(args.stream):
        raise TefqError("--at runs over --stream PATH or over --facts FILE (one of them)", "--at")
    doc, background = _document(args)
    if args.facts:
        run = as_of_facts(doc, args.facts, instants, background)
    else:
        paths = [getattr(s, "path", s) for s in args.stream]
        if chosen_engine(getattr(args, "engine", "oracle"), paths, _master(args)).engine == "spark":
            run = as_of_spark(doc, paths, instants, background, master=_master(args),
                              progress=not getattr(args, "quiet", False))
        else:
            run = as_of_stream(doc, _elements(paths), instants, background)
    plan_kinds(run, doc)  # typed Parquet/Arrow columns as the plan gives them
    write_results(run.results, output.format, output.out, output.tick_format, output.terms)
    write_metrics(run.metrics, output.metrics)
    if not getattr(args, "quiet", False):
        m = run.metrics
        engine = m.extra.get("engine", "oracle")
        if args.facts:  # only the intervals the queries can see at the instants are read
            stored = stored_rows(args.facts)
            of = f" of {stored:,}" if stored is not None else ""
            facts = f"{m.facts_created:,}{of} stored fact intervals read ({visible_text(doc, instants)})"
        else:  # every fact of the stream is built, whatever the instants
            source = "Spark's fact table" if engine == "spark" else f"{plural(m.events_in, 'event')} replayed"
            facts = f"{plural(m.facts_created, 'fact interval')} from {source}"
        print(f"tefq: as of {plural(len(set(instants)), 'instant')}, {plural(m.rows_out, 'row')}; {facts}; "
              f"{m.wall_seconds:.2f} s ({engine})", file=sys.stderr)
    return 0


__all__ = ["register", "cmd_facts", "follow_facts", "run_as_of"]
