"""The run service: the one way from a described run to its rows, for every front door.

`tefq run` (tefq.cli), `tefq usecase` (tefq.iptv.cli), `tefq compare` (tefq.compare) and
`Query.run` (tefq.api) describe a run as a `RunRequest`; `execute` does the rest, once for all:

1. the inputs checked: stream paths and the background file exist; in-memory events become an
   Arrow table (tefq.io.run_inputs);
2. the engine chosen (`--engine auto`: `choose_engine`);
3. the options settled (`settle`): durations in ms, the tick bound checked: one `RunSettings`,
   options the chosen engine would silently drop refused;
4. the background read once (its predicates bind the document; its triples feed the oracle, its
   graph Spark) and the document bound;
5. the inputs staged (standard input, `--stream-format`, tables; for Spark, as Parquet by the one
   stager, tefq.io.staging) with ONE bad-row log for the run, and ONE of four runs (`RUNS`): the
   oracle or Spark, native or simulated;
6. the metrics completed (bad rows, wall time, rows out) and, when the request says where, the
   results and metrics written.

Errors name the options as the command line spells them (`--lateness`): the API's keyword
arguments carry the same names.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tefq import cleanup, progress
from tefq.plan.absent import events_per_input, warn_inputs
from tefq.progress import plural
from tefq.errors import SPARK_MISSING, TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.io.validate import RANGE_HINT, TS_MAX, TS_MIN
from tefq.plan.logical import AggregateQuery, DerivedFact, Document
from tefq.results import RunResult
from tefq.vocabulary import DEFAULT_IDLE_MS, DEFAULT_MAX_TICKS, RunSettings

if TYPE_CHECKING:
    import pyarrow as pa

    from tefq.io.rdf import Background
    from tefq.io.run_inputs import RunInputs
    from tefq.spark.engine import SparkRun

ENGINES = ("spark", "oracle", "auto")
ENGINE_VARIABLE = "TEFQ_ENGINE"  # the command line's default engine (else auto)
# Options only the Spark engine reads: with the oracle they would be silently dropped.
SPARK_ONLY_OPTIONS = ("checkpoint", "master", "max_files_per_trigger", "ingest", "join_order", "idle_timeout", "conf",
                      "driver_memory", "accept_gaps")
# --engine auto: below this many stream events (estimated) a bounded run goes to the oracle, whose
# whole run beats Spark's there: with Spark to start (cold) or already up (_WARM: a warm engine,
# tefq.server; or a session in this process), for a document light for the oracle
# (`light_for_the_oracle`: UC1) or any other (_HEAVY: UC2, UC3) (docs/cli.md, "Choosing the engine").
AUTO_ORACLE_EVENTS = 120_000
AUTO_ORACLE_EVENTS_HEAVY = 40_000
AUTO_ORACLE_EVENTS_WARM = 10_000
AUTO_ORACLE_EVENTS_WARM_HEAVY = 3_000
TEXT_BYTES_PER_EVENT = 80  # TSV/CSV/N-Quads rows of the IPTV data: ~80-110 bytes
STDIN = "-"


# ---------------------------------------------------------------- what a front door describes
class DocumentSource(Protocol):
    """Something that binds to a document once the background's predicates are known
    (`QueryFile`; `tefq.Query`)."""

    def document(self, background_predicates: frozenset[str] = frozenset()) -> Document: ...


def prefix_mappings(values: Sequence[str] | None) -> dict[str, str]:
    """`--prefix p=IRI` values (also `:=IRI` and `=IRI` for the empty prefix) as a mapping."""
    out: dict[str, str] = {}
    for v in values or ():
        name, sep, ns = v.partition("=")
        if not sep or not ns:
            raise TefqError(f"--prefix expects p=IRI, got '{v}'", file="--prefix")
        out[name.rstrip(":")] = ns.strip("<>")
    return out


@dataclass(frozen=True)
class QueryFile:
    """A .tef file, with the prefixes the command line maps (`--prefix`)."""

    path: str
    prefixes: Mapping[str, str] = field(default_factory=dict)

    def document(self, background_predicates: frozenset[str] = frozenset()) -> Document:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.analysis import load

        return load(self.path, extra_prefixes=self.prefixes, background_predicates=background_predicates)


@dataclass(frozen=True)
class QueryText:
    """A document given as text (`tefq run -` reads it from standard input, `-e TEXT` inline), with
    the prefixes the command line maps."""

    text: str
    name: str
    prefixes: Mapping[str, str] = field(default_factory=dict)

    def document(self, background_predicates: frozenset[str] = frozenset()) -> Document:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.analysis import bind_text

        return bind_text(self.text, self.name, self.prefixes, background_predicates)


def query_source(path: str | None, text: str | None, prefixes: Mapping[str, str]) -> QueryFile | QueryText:
    """The document a command line names: FILE.tef, `-` (standard input, read now) or `-e TEXT`."""
    if (path is None) == (text is None):
        raise TefqError("give the query as FILE.tef, as - (standard input) or with -e TEXT (one of them)",
                        file="query")
    if text is not None:
        return QueryText(text, "<-e>", prefixes)
    if path == STDIN:
        return QueryText(sys.stdin.read(), "<stdin>", prefixes)
    return QueryFile(path, prefixes)


@dataclass(frozen=True)
class SparkOptions:
    """What only the Spark engine reads (refused with the oracle, which would drop it)."""

    master: str | None = None
    checkpoint: str | None = None
    max_files_per_trigger: int | None = None
    ingest: str | None = None
    follow: bool = False
    join_order: str | None = None  # windowed BGPs: static | adaptive (None: adaptive)
    idle_timeout: int | str | None = None  # --follow: spec §6.1's idle timeout (default 10 s)
    accept_gaps: bool | None = None  # Redis: read on after entries removed before they were read (None: stop)
    session: Any = None  # a SparkSession to run in (tefq compare runs many); None: started as needed
    conf: tuple[tuple[str, str], ...] | None = None  # --conf KEY=VALUE: a session started for the run gets them
    driver_memory: str | None = None  # --driver-memory (default: TEFQ_SPARK_DRIVER_MEMORY or 2g)

    def given(self) -> list[str]:
        """The Spark-only options set, spelled as on the command line."""
        named = ["--" + name.replace("_", "-") for name in SPARK_ONLY_OPTIONS if getattr(self, name) is not None]
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.runtime.session_source import is_remote

        return [("--remote" if o == "--master" and is_remote(self.master) else o) for o in named]


@dataclass(frozen=True)
class Output:
    """Where the rows and metrics of a run are written (the command line's --format, --out,
    --tick-format, --metrics, --terms)."""

    format: str = "csv"
    out: str | None = None
    tick_format: str = "ms"
    metrics: str | None = None
    terms: str = "ntriples"  # parquet / arrow: "typed" columns (tefq.results.typed_column)

    @staticmethod
    def chosen(fmt: str | None, out: str | None, command: str, *, tick_format: str | None = None,
               metrics: str | None = None, terms: str | None = None, follow: bool = False) -> "Output":
        """The output a command line asks for, its unset options settled by one rule
        (tefq.io.output_format: --out's extension, the terminal; --follow appends, so its format must)."""
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.io.output_format import chosen_format, chosen_terms, chosen_tick_format
        from tefq.io.result_writers import APPENDABLE_FORMATS, FORMATS, check_term_output

        fmt = chosen_format(fmt, out, FORMATS, command, terminal="csv" if follow else "text")
        if follow and fmt not in APPENDABLE_FORMATS:
            raise TefqError(f"--follow appends rows as they come: use --format {', '.join(APPENDABLE_FORMATS)}",
                            file="--format")
        terms = chosen_terms(terms, fmt)
        check_term_output(fmt, terms)  # before the run, not after it
        return Output(fmt, out, chosen_tick_format(tick_format, fmt), metrics, terms)


@dataclass(frozen=True)
class RunRequest:
    """One run, as a front door describes it. `events`: stream paths (`-`: standard input) or
    in-memory events (a pandas DataFrame, a pyarrow Table, (ts, s, p, o) tuples); `stream_iris[i]`:
    the IRI path i is bound to (`--stream IRI=PATH`, read by windowed `FROM STREAM <IRI>` only),
    None (or missing): an unnamed input, read by every query. `background`: a
    file or an rdflib graph. Durations are ms or text (`5s`); `max_ticks` None is the default
    bound. `output` None: the rows are only returned."""

    query: DocumentSource | Document
    events: Any
    stream_format: str | None = None
    background: Any = None
    engine: str = "auto"
    t0: int = 0
    lateness: int | str | None = None
    max_ticks: int | None = None
    simulate: str | None = None
    window: int | str | None = None
    bad_rows: str | None = None
    progress: bool = True
    spark: SparkOptions = SparkOptions()
    output: Output | None = None
    stream_iris: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class EngineChoice:
    """The engine a run takes, and why (`--engine auto`; empty for an engine named outright)."""

    engine: str
    why: str = ""

    def label(self) -> str:
        """As the summary line shows it: `spark`, `spark, warm`, `oracle: auto, about 8 events, ...`."""
        return f"{self.engine}: {self.why}" if self.why else self.engine


@dataclass
class RunOutcome:
    """A finished run: the engine that ran it (after `--engine auto`) and its rows and metrics."""

    engine: str
    run: RunResult
    facts: bool = True  # the document defines facts (else the summary does not count them)
    choice: EngineChoice | None = None

    def summary(self) -> str:
        """The one line the command line prints on stderr, in a reader's words, ending with the
        engine and, when `--engine auto` chose it or it ran warm, why."""
        m = self.run.metrics
        parts = [f"{plural(m.events_in, 'event')} in, {plural(m.rows_out, 'row')} out at {plural(m.ticks, 'tick')}"]
        if self.facts:
            parts.append(f"{plural(m.facts_created, 'fact')} ({m.facts_closed:,} closed)")
        if m.late_events:
            parts.append(f"{plural(m.late_events, 'late event')} not applied")
        why = f" ({self.choice.why})" if self.choice is not None and self.choice.why else ""
        return (f"tefq: {'; '.join(parts)}; {m.wall_seconds:.2f} s on "
                f"{'Spark' if self.engine == 'spark' else 'the oracle'}{why}")


# ---------------------------------------------------------------- the sequence
def execute(request: RunRequest) -> RunOutcome:
    """Run `request` (see the module doc); bad input raises a located TefqError."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.run_inputs import stage

    paths, table = check_inputs(request)
    check_outputs(request)
    background = read_background(request.background)
    doc = bind(request.query, background)
    choice = engine_choice(request, doc)
    engine = choice.engine
    if engine == "spark" and importlib.util.find_spec("pyspark") is None:
        raise TefqError(SPARK_MISSING, file="--engine")
    settings = settle(request, engine)
    # registered: removed however the run ends (tefq.cleanup), also when memory ran out and
    # the block's own clean-up could not run
    with cleanup.temporary_directory(prefix="tefq-stage-") as workdir, progress.showing(request.progress):
        job = Job(request, settings, doc, background, stage(paths, request.stream_format, workdir, table), workdir,
                  BadRowLog(request.bad_rows))
        started = time.perf_counter()
        try:
            run = RUNS[settings.engine, request.simulate is not None](job)
        finally:
            job.log.close()
        finish_metrics(run, job.log, started, count_rows=not request.spark.follow)
        plan_kinds(run, doc)
        if request.output is not None:
            write(run, request.output, appended=request.spark.follow)
    return RunOutcome(settings.engine, run, bool(doc.facts), choice)


def check_inputs(request: RunRequest) -> tuple[list[str], "pa.Table | None"]:
    """The stream paths (each must exist; `-` is standard input) or the in-memory events as a
    table; the background file must exist."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.run_inputs import events_table, is_paths

    if isinstance(request.t0, bool) or not isinstance(request.t0, int):
        raise TefqError(f"--t0 expects integer milliseconds, got {type(request.t0).__name__}", file="--t0")
    if not TS_MIN <= request.t0 <= TS_MAX:
        raise TefqError(f"--t0 {request.t0} is {RANGE_HINT}", file="--t0")
    bg = request.background
    if isinstance(bg, (str, os.PathLike)) and not os.path.exists(bg):
        raise TefqError(f"no such background file: {os.fspath(bg)}", file="--background")
    if not is_paths(request.events):
        return [], events_table(request.events)
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.redis_stream import RedisStream, is_redis_url

    paths = stream_paths(request.events)
    for path in paths:
        if is_redis_url(path):
            RedisStream.parse(path)  # a bad address: exit 2 now, naming it
        elif path != STDIN and not os.path.exists(path):
            raise TefqError(f"no such stream file or directory: {path}", file="--stream")
    return paths, None


def check_outputs(request: RunRequest) -> None:
    """Exit 2 before the run, naming the option, if a file it ends by writing could not be written
    (tefq.io.atomic.check_writable)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.atomic import check_writable
    from tefq.io.result_writers import is_directory_target

    out = request.output
    if out is not None:
        check_writable(out.out, "--out", is_directory_target(out.out))
        check_writable(out.metrics, "--metrics")
    check_writable(request.bad_rows, "--bad-rows", directory_target=True)


def stream_paths(events: Any) -> list[str]:
    """The stream paths `events` names (`-`: standard input); none for in-memory events."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.run_inputs import is_paths

    if not is_paths(events):
        return []
    return [os.fspath(events)] if isinstance(events, (str, os.PathLike)) else [os.fspath(p) for p in events]


def default_engine() -> str:
    """The command line's `--engine` when none is given: `TEFQ_ENGINE`, else auto."""
    engine = os.environ.get(ENGINE_VARIABLE, "auto").strip() or "auto"
    if engine not in ENGINES:
        raise TefqError(f"{ENGINE_VARIABLE}={engine!r}: expected oracle, spark or auto", file=ENGINE_VARIABLE)
    return engine


def choose_engine(request: RunRequest) -> str:
    """The engine `request` runs on (`engine_choice`)."""
    return engine_choice(request).engine


def engine_choice(request: RunRequest, doc: Document | None = None) -> EngineChoice:
    """`--engine auto`: Spark for what only Spark does (--follow, --checkpoint, --master,
    --max-files-per-trigger, --ingest, standard input of unknown size), else `auto_engine` by the
    input's size and the bound document `doc` (None: taken as light for the oracle)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.runtime.session_source import warm_label

    if request.engine not in ENGINES:
        raise TefqError(f"unknown engine {request.engine!r}: expected oracle, spark or auto", file="--engine")
    label = warm_label()
    warm = f", {label}" if label else ""
    if request.engine != "auto":
        return EngineChoice(request.engine, label if request.engine == "spark" else "")
    paths = stream_paths(request.events)
    if request.spark.given() or request.spark.follow or STDIN in paths:
        return EngineChoice("spark", f"auto, {'standard input' if STDIN in paths else 'a Spark option'}{warm}")
    n = estimated_events(paths) if paths else len(request.events) if hasattr(request.events, "__len__") else 0
    return auto_engine(n, light=doc is None or light_for_the_oracle(doc))


def auto_engine(events: int, light: bool = True) -> EngineChoice:
    """`--engine auto` for a bounded input of about `events` events: the oracle below
    AUTO_ORACLE_EVENTS (AUTO_ORACLE_EVENTS_HEAVY for a document not `light` for the oracle), or
    AUTO_ORACLE_EVENTS_WARM (_HEAVY) when Spark is up already, else Spark."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.runtime.session_source import is_warm, warm_label

    warm = is_warm()
    limit = ((AUTO_ORACLE_EVENTS_WARM if light else AUTO_ORACLE_EVENTS_WARM_HEAVY) if warm
             else AUTO_ORACLE_EVENTS if light else AUTO_ORACLE_EVENTS_HEAVY)
    engine = "oracle" if events < limit else "spark"
    what = "" if light else " for this query"
    # the limit follows is_warm; the words say whether this run waited for Spark (warm_label)
    state = ("the warm engine just started" if warm_label() == "warm engine just started" else "Spark warm") \
        if warm else "Spark to start"
    return EngineChoice(engine, f"auto, about {events:,} events, the oracle below {limit:,}{what} with {state}")


def light_for_the_oracle(doc: Document) -> bool:
    """A document the oracle runs at its cheapest per event: one aggregate query of COUNTs over
    CURRENT and background patterns, no derived fact (UC1). Per event, the oracle's whole run costs
    ~1.75x that for UC2's DURATION average and ~3.4x for UC3's derived facts (docs/cli.md,
    "Choosing the engine"); windowed queries evaluate SPARQL per window."""
    if len(doc.queries) != 1 or any(isinstance(f, DerivedFact) for f in doc.facts):
        return False
    q = doc.queries[0]
    return (isinstance(q, AggregateQuery) and all(a.func == "COUNT" for a in q.aggregates)
            and all(w.kind in ("current", "background") for w in q.where))


def estimated_events(paths: list[str]) -> int:
    """Stream events, cheaply: Parquet footers' row counts, else bytes / TEXT_BYTES_PER_EVENT; a
    Redis stream's entries added so far."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.readers import stream_files
    from tefq.io.redis_stream import RedisStream, head, is_redis_url

    total = 0
    for path in paths:
        if is_redis_url(path):
            stream = RedisStream.parse(path)
            total += head(stream.connect(), stream).n
            continue
        for f in stream_files(path):
            if f.endswith(".parquet"):
                import pyarrow.parquet as pq

                total += pq.ParquetFile(f).metadata.num_rows
            else:
                total += os.path.getsize(f) * (4 if f.endswith(".gz") else 1) // TEXT_BYTES_PER_EVENT
    return total


@dataclass(frozen=True)
class Settings:
    """A request's options in the units the engines take, checked once: the engine, the
    simulation's window, and the run's settings (t0, lateness, tick bound, idle timeout), which
    every engine takes whole."""

    engine: str
    window_ms: int | None
    run: RunSettings


def settle(request: RunRequest, engine: str) -> Settings:
    """Durations in ms, the tick bound and the combinations of options, checked for `engine`."""
    from tefq.analysis.durations import duration_ms  # tefq.analysis loads the parser: `import tefq` stays light

    lateness_ms = duration_ms(request.lateness, "--lateness")
    window_ms = duration_ms(request.window, "--window") if request.window is not None else None
    idle = request.spark.idle_timeout
    idle_ms = duration_ms(idle, "--idle-timeout") if idle is not None else None
    refuse_dropped_options(request, engine)
    refuse_restaged_inputs(request)
    files = request.spark.max_files_per_trigger
    if files is not None and files < 1:  # 0 would read as "not set" further down
        raise TefqError(f"expects a count >= 1 (files per micro-batch), got {files}", file="--max-files-per-trigger")
    return Settings(engine, window_ms, RunSettings(request.t0, lateness_ms, checked_max_ticks(request.max_ticks),
                                                   DEFAULT_IDLE_MS if idle_ms is None else idle_ms))


def checked_max_ticks(max_ticks: int | None) -> int:
    """`--max-ticks` checked (None: the default bound; 0: no bound)."""
    if max_ticks is None:
        return DEFAULT_MAX_TICKS
    if max_ticks < 0:
        raise TefqError("--max-ticks expects a count >= 0 (0: no bound)", file="--max-ticks")
    return max_ticks


def refuse_dropped_options(request: RunRequest, engine: str) -> None:
    """Options the chosen engine or mode would ignore are refused, never silently dropped."""
    spark = request.spark
    if spark.follow and (engine != "spark" or request.simulate):
        raise TefqError("--follow runs on the Spark engine only (a bounded file set: drop --follow)", file="--follow")
    if spark.idle_timeout is not None and not spark.follow:
        raise TefqError("--idle-timeout applies to live runs (--follow): a bounded input's streams end instead",
                        file="--idle-timeout")
    if request.window is not None and not request.simulate:
        raise TefqError("--window only applies with --simulate", file="--window")
    if request.simulate and spark.ingest in ("columnar", "direct"):
        raise TefqError(f"--ingest {spark.ingest} does not run the simulations (they read rows)", file="--ingest")
    if engine == "oracle":
        for option in spark.given():
            raise TefqError(f"{option} applies to the Spark engine only: drop it or use --engine spark", file=option)


def refuse_restaged_inputs(request: RunRequest) -> None:
    """Standard input and --stream-format inputs are staged afresh by each run: once, and never
    for a run that must read the same files again (--follow, --checkpoint)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.redis_stream import is_redis_url

    paths = stream_paths(request.events)
    restaged = STDIN in paths or request.stream_format is not None
    if request.stream_format is not None and any(is_redis_url(p) for p in paths):
        raise TefqError("--stream-format does not apply to a Redis stream (its entries have fields ts, s, p, o)",
                        file="--stream-format")
    if paths.count(STDIN) > 1:
        raise TefqError("standard input can be given once (--stream -)", file="--stream")
    if request.spark.follow and restaged:
        raise TefqError("--follow watches stream directories as they grow: --stream - and --stream-format "
                        "are for bounded runs", file="--follow")
    if request.spark.checkpoint and restaged:
        raise TefqError("--checkpoint resumes over the same stream files: --stream - and --stream-format are "
                        "staged afresh by each run; save the stream as a file named by its format "
                        "(e.g. events.tsv) and pass that", file="--checkpoint")


def read_background(source: Any) -> "Background | None":
    """The background (a file, an rdflib graph, or None), read once (tefq.io.rdf.Background)."""
    if source is None:
        return None
    if isinstance(source, (str, os.PathLike)) and not os.path.exists(source):
        raise TefqError(f"no such background file: {os.fspath(source)}", file="--background")
    import rdflib

    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.rdf import load_background

    if not isinstance(source, (str, os.PathLike, rdflib.Graph)):
        raise TefqError(f"the background is a file or an rdflib Graph, not {type(source).__name__}",
                        file="--background")

    return load_background(source)


def bind(query: DocumentSource | Document, background: "Background | None") -> Document:
    """The document, bound with the background's predicates (a bound Document is taken as is),
    ready to run: a `:` it uses undeclared is an error now (spec §1: it parses, it runs once mapped)."""
    doc = query if isinstance(query, Document) else query.document(
        background.predicates if background is not None else frozenset())
    doc.require_mapped()
    return doc


# ---------------------------------------------------------------- the four runs
@dataclass
class Job:
    """What a run needs once the request is settled."""

    request: RunRequest
    settings: Settings
    doc: Document
    background: "Background | None"
    staged: "RunInputs"
    workdir: str
    log: BadRowLog  # the run's one log of bad rows: every engine and the stager record and count theirs here

    def spark_paths(self) -> list[str]:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.io.staging import as_parquet

        return as_parquet(self.staged, self.workdir, self.log)

    def spark_run(self, **options: Any) -> "SparkRun":
        """The request both Spark runs take: the run's settings whole, the background read once."""
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.engine import SparkRun

        r, s = self.request, self.request.spark
        master = s.master or os.environ.get("TEFQ_SPARK_MASTER")
        return SparkRun(self.doc, tuple(self.spark_paths()), self.background, self.settings.run, master=master,
                        spark=s.session or self.configured_session(master), max_files_per_trigger=s.max_files_per_trigger,
                        bad_row_log=self.log, progress=r.progress, stream_names=tuple(self.staged.names()),
                        **options)

    def configured_session(self, master: str | None) -> Any:
        """A session started with the user's Spark settings (--conf, --driver-memory); None without
        them (the engine starts its own)."""
        s = self.request.spark
        if not s.conf and s.driver_memory is None:
            return None
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.runtime.progress import say
        from tefq.spark.runtime.session import SessionSettings, get_session
        from tefq.spark.runtime.session_source import starting_line

        say(self.request.progress, f"{starting_line(master).rstrip('…')} with your settings…")
        return get_session(master, settings=SessionSettings(tuple(s.conf or ()), s.driver_memory))

    @property
    def triples(self) -> tuple | None:
        return None if self.background is None else self.background.triples


def on_oracle(job: Job) -> RunResult:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.oracle import run_document

    elements, arrival = job.staged.read_all(job.log)
    warn_inputs(job.doc, {p for _, _, p, _ in elements}, events_per_input(arrival.labels, arrival.rounds))
    return run_document(job.doc, elements, job.triples, settings=job.settings.run, arrival=arrival,
                        locate=job.staged.locate, stream_iris=job.request.stream_iris)


def simulated_on_oracle(job: Job) -> RunResult:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.simulate import run as simulate

    elements, arrival = job.staged.read_all(job.log)
    warn_inputs(job.doc, {p for _, _, p, _ in elements}, events_per_input(arrival.labels, arrival.rounds))
    return simulate(job.doc, arrival.in_stream_order(elements), job.request.simulate, job.settings.window_ms, job.triples,
                    t0=job.settings.run.t0, max_ticks=job.settings.run.max_ticks, locate=job.staged.locate)


def on_spark(job: Job) -> RunResult:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.result_writers import ResultAppender
    from tefq.spark.engine import run as spark_run

    s, out = job.request.spark, job.request.output
    appender = ResultAppender(out.format, out.out, out.tick_format) if s.follow and out is not None else None
    return spark_run(job.spark_run(checkpoint=s.checkpoint, follow=s.follow, ingest=s.ingest or "auto", on_rows=appender,
                                   accept_gaps=bool(s.accept_gaps), stream_iris=job.request.stream_iris,
                                   **({"join_order": s.join_order} if s.join_order else {})))


def simulated_on_spark(job: Job) -> RunResult:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.simulate import run as spark_simulate

    return spark_simulate(job.spark_run(), job.request.simulate, job.settings.window_ms)


RUNS: dict[tuple[str, bool], Callable[[Job], RunResult]] = {
    ("oracle", False): on_oracle, ("oracle", True): simulated_on_oracle,
    ("spark", False): on_spark, ("spark", True): simulated_on_spark,
}


# ---------------------------------------------------------------- after the run
def finish_metrics(run: RunResult, log: BadRowLog, started: float, *, count_rows: bool) -> None:
    """The bad rows (the run's one log counts them all, whichever engine found them), the wall
    time, and (unless follow mode counted the rows it handed on) the rows out."""
    run.metrics.extra["bad_rows"] = log.count
    run.metrics.wall_seconds = round(time.perf_counter() - started, 3)
    if count_rows:
        run.metrics.rows_out = sum(r.row_count() for r in run.results)


def plan_kinds(run: RunResult, doc: Document) -> None:
    """Each result's column kinds as its plan gives them (typed outputs: tefq.results.column_kinds)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.results import column_kinds

    queries = {q.name: q for q in doc.queries}
    for result in run.results:
        if result.name in queries:
            result.kinds = column_kinds(queries[result.name])


def write(run: RunResult, output: Output, *, appended: bool) -> None:
    """The results (unless follow mode appended them as they came) and the metrics file, also when
    writing the results failed (`tefq run ... --metrics m.json | head` closes standard output early)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.result_writers import write_metrics, write_results

    try:
        if not appended:
            write_results(run.results, output.format, output.out, output.tick_format, output.terms)
    finally:
        write_metrics(run.metrics, output.metrics)


__all__ = ["RunRequest", "RunOutcome", "EngineChoice", "QueryFile", "prefix_mappings", "SparkOptions", "Output", "execute",
           "default_engine", "choose_engine", "engine_choice", "auto_engine", "estimated_events", "read_background", "bind", "checked_max_ticks",
           "AUTO_ORACLE_EVENTS", "AUTO_ORACLE_EVENTS_HEAVY", "AUTO_ORACLE_EVENTS_WARM",
           "AUTO_ORACLE_EVENTS_WARM_HEAVY", "light_for_the_oracle"]
