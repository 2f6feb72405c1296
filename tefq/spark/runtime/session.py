"""The SparkSession factory: one place for every Spark setting tefq relies on. A session comes
from `session_source.SESSION_SOURCE` when one is set (a warm engine's), else it starts here."""
from __future__ import annotations

import os
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from tefq.errors import TefqError
from tefq.spark.planning.common import shuffle_partitions
from tefq.spark.runtime import jvm_archive, spark_home
from tefq.spark.runtime.jvm_scratch import jvm_scratch
from tefq.spark.runtime.quiet import jvm_stderr
from tefq.spark.runtime.connect import is_connect, remote_session
from tefq.spark.runtime.session_source import SESSION_SOURCE, checked_master, default_master, is_remote, runtime_key
from tefq.spark.runtime.task_retries import with_retries

# Quiet logs: Spark's banner, WARN lines and the task failures tefq reports itself stay off stderr
# (TEFQ_SPARK_LOG=warn shows them again).
MIN_BATCHES_TO_RETAIN = 20  # docs/spark.md "Restart and reliability"
# The driver JVM compiles with C1 alone: a run's JVM work is short and new with every query (Spark
# generates and compiles fresh classes for each), so C2's compiles take the cores from the Python
# workers and do not pay back (docs/spark.md "Start-up", measured). TEFQ_JIT=full: the JVM's default.
JIT_VARIABLE = "TEFQ_JIT"
C1_ONLY = "-XX:TieredStopAtLevel=1"
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
# Local files without Hadoop's helper processes (pyspark ships no native Hadoop library, so Hadoop
# forks `chmod` and `readlink` for the files it writes; docs/spark.md "Session", measured there):
# - checkpoint files (offsets, commits, state changelogs) through Hadoop's FileSystem API: the
#   default FileContext manager's create and rename forked ~120 ms into each micro-batch's state
#   commit. Renames stay atomic on a local disk; a checkpoint has one writer (its lock).
# - no `.crc` side file, one more `chmod` each (~0.5 s of a 2M-event run). Operator state and sink
#   records are still checked for their structure by runtime/codec; RocksDB's files carry checksums.
LOCAL_FILES = {
    "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
}
LOG4J2_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "log4j2.properties")  # tefq/spark/


def _cores(master: str) -> int:
    # local[N] / local-cluster[n,c,m] tell us the parallelism; otherwise assume this machine's.
    if master.startswith("local["):
        inner = master[6:-1].split(",")[0]
        if inner.isdigit():
            return int(inner)
    if master.startswith("local-cluster["):
        n, c, _ = master[14:-1].split(",")
        return int(n) * int(c)
    return os.cpu_count() or 2


def jit_options() -> list[str]:
    """The driver JVM's compiler options: C1 alone, unless TEFQ_JIT=full."""
    return [] if os.environ.get(JIT_VARIABLE, "").strip().lower() == "full" else [C1_ONLY]


@dataclass(frozen=True)
class SessionSettings:
    """Spark settings the user gives (`--conf KEY=VALUE`, `--driver-memory`), applied over tefq's own
    when a session starts (a running session keeps the settings it started with)."""

    conf: tuple[tuple[str, str], ...] = ()
    driver_memory: str | None = None


def tefq_options(master: str, archive: list[str], settings: SessionSettings) -> dict[str, str]:
    """tefq's Spark settings for a session on `master` (`archive`: the driver JVM's archive options)."""
    partitions = str(shuffle_partitions(_cores(master)))  # one bucket per core
    driver_java_options = " ".join([f"-Dlog4j2.configurationFile={LOG4J2_FILE}", "-Duser.timezone=UTC", *archive,
                                    *jit_options()])
    return {
        "spark.sql.shuffle.partitions": partitions,
        "spark.default.parallelism": partitions,
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        **LOCAL_FILES,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "200000",
        "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",  # no per-row size check (PERF-NOTES)
        "spark.sql.execution.pythonUDF.arrow.enabled": "true",
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",  # stable partitioning for stateful plans
        # Zone-less timestamps (CSV/TSV `2024-01-01T10:00:00`) are UTC, as on the oracle (spec §1).
        "spark.sql.session.timeZone": "UTC",
        # Checkpoint retention: offsets, commits and state versions of the last 20 micro-batches.
        "spark.sql.streaming.minBatchesToRetain": str(MIN_BATCHES_TO_RETAIN),
        # Small bounded inputs: reuse the Python workers and skip the startup of a second one.
        "spark.python.worker.reuse": "true",
        "spark.driver.memory": settings.driver_memory or os.environ.get("TEFQ_SPARK_DRIVER_MEMORY", "2g"),
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # Workers start in the driver's working directory and `python -m` would put it first on
        # their path: a `tefq/` folder there (another checkout) would shadow the installed one.
        "spark.executorEnv.PYTHONSAFEPATH": "1",
        "spark.driver.extraJavaOptions": driver_java_options,
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }


# A session started here without a start-up archive for its JDK and jars (none written yet, a new
# pyspark or JDK, or pruned for another checkout's): a cold start that could be seconds shorter.
_WITHOUT_ARCHIVE = threading.Event()
ARCHIVE_NOTE = ("no start-up archive for this Java and Spark: `python -m tefq.jvm_archive_setup` (or `make "
                "spark-archive`) writes one in about a minute, and later cold starts are seconds shorter")


def archive_note() -> str | None:
    """`ARCHIVE_NOTE` once, if a session started in this process without an archive."""
    if not _WITHOUT_ARCHIVE.is_set():
        return None
    _WITHOUT_ARCHIVE.clear()
    return ARCHIVE_NOTE


@contextmanager
def user_settings(settings: SessionSettings) -> Iterator[None]:
    """Applying the user's `--conf` settings: a value Spark refuses is exit 2 naming it (Spark's
    own sentence), not an internal error."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - py4j and pyspark wrap Spark's refusal in several types
        refused = conf_refusal(str(e), settings.conf)
        if refused is None:
            raise
        raise refused from None


def set_runtime_settings(spark: SparkSession, settings: SessionSettings, fixed: str,
                         own: dict[str, str] | None = None) -> None:
    """On a running session (the warm engine's, a Spark Connect server's): tefq's settings `own`
    that it takes, then the user's `--conf`s; a user's key the session fixed when it started is
    exit 2 (`fixed`: when, and by whom), as is a value Spark refuses."""
    for key, value in (own or {}).items():
        if spark.conf.isModifiable(key):
            spark.conf.set(key, value)
    for key, value in settings.conf:
        if not spark.conf.isModifiable(key):
            raise TefqError(f"--conf {key} is set when {fixed}", file="--conf")
        with user_settings(settings):
            spark.conf.set(key, value)


def conf_refusal(text: str, conf: Sequence[tuple[str, str]]) -> TefqError | None:
    """Spark's refusal of one of the `conf` settings in the error `text`, as a located error."""
    first = text.splitlines()[0] if text else ""
    m = re.search(r"\[INVALID_CONF_VALUE[^\]]*\]\s*(.*?)(\s*SQLSTATE: \w+)*\s*$", first)
    if m is None or not any(f'"{key}"' in text for key, _ in conf):
        return None
    return TefqError(m.group(1), file="--conf")


def on_this_machine(spark: SparkSession) -> bool:
    """Whether the session's tasks run on this machine (`local`, `local[...]`, `local-cluster[...]`):
    they see its disk (runtime/shared_files.py), and starting their workers early pays."""
    return not is_connect(spark) and spark.conf.get("spark.master", "").startswith("local")


def warm_workers_soon(spark: SparkSession) -> None:
    """In a thread beside the command's own work (tefq.entry.EarlySession, a warm engine's run after
    an idle minute): start the Python daemon and a worker per core, each loading pandas, pyarrow
    and the operators' base, so that the first micro-batch finds them up (Spark hands a task an
    idle worker: `spark.python.worker.reuse`; it ends workers idle for a minute)."""
    threading.Thread(target=warm_workers, args=(spark,), name="tefq-warm-workers", daemon=True).start()


def warm_workers(spark: SparkSession) -> None:
    """One task per core running `operators.base.warm_up` (see `warm_workers_soon`)."""
    # deferred: importing the session does not import the operators (pandas) until a run warms them
    from tefq.spark.operators.base import warm_up

    cores = spark.sparkContext.defaultParallelism
    try:
        spark.range(0, cores, 1, cores).mapInArrow(warm_up, "id long").collect()
    except Exception:  # noqa: BLE001 - a head start only: the run starts its workers itself
        pass


def launch_driver_jvm(options: dict[str, str], stderr: int | None) -> None:
    """Start the driver JVM with `options` and `stderr` as its standard error (pyspark's
    `launch_gateway` takes Popen's arguments), unless this process has one already (a session
    stopped and started again keeps it). Not fd 2 itself redirected: a session may start in a
    thread while the command line writes to stderr (tefq.entry.EarlySession)."""
    if SparkContext._gateway is not None:  # pyspark's one JVM per process (a class attribute since 1.x)
        return
    conf = SparkConf().setAll(options.items())
    SparkContext(conf=conf, gateway=launch_gateway(conf, None if stderr is None else {"stderr": stderr}))


def get_session(master: str | None = None, app_name: str = "tefq",
                archive_options: list[str] | None = None, settings: SessionSettings = SessionSettings()) -> SparkSession:
    """The session of `master` (default: `default_master`): from `SESSION_SOURCE` when one is set
    (the warm engine's, given the user's `settings`; or HandOver), else started here
    (`start_session`)."""
    source = SESSION_SOURCE.get()
    if source is not None and archive_options is None:
        return source(default_master(master), settings)
    return start_session(master, app_name, archive_options, settings)


def start_session(master: str | None = None, app_name: str = "tefq", archive_options: list[str] | None = None,
                  settings: SessionSettings = SessionSettings()) -> SparkSession:
    """Create (or reuse) the session in this process. Workers must run this very interpreter, or they start the
    system Python and fail with ModuleNotFoundError (measured, see DESIGN.md). A new driver JVM maps
    the class-data-sharing archive when there is one (`archive_options`: the driver JVM's archive
    options instead, jvm_archive_setup's dump); executors' JVMs are left alone. `settings`: the
    user's, last."""
    m = with_retries(checked_master(master))  # a master Spark cannot parse: exit 2 before a JVM starts
    if is_remote(m):  # a Spark Connect server's session: its JVM, not one here
        spark = remote_session(m, settings)
        own = tefq_options(spark.conf.get("spark.master", None) or "", [], settings)  # its cores: its buckets
        set_runtime_settings(spark, settings, "the Spark Connect server starts, not by its clients",
                             {k: v for k, v in own.items() if runtime_key(k)})
        return spark
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # silences "hostname resolves to a loopback address"
    spark_home.use_lean_home()  # before the archive is looked for: it is valid for one classpath
    archive = jvm_archive.driver_options() if archive_options is None else archive_options
    if archive_options is None and not archive and jvm_archive.enabled() and jvm_archive.archive_key() is not None:
        _WITHOUT_ARCHIVE.set()  # told once, by the run that waits for this start (`archive_note`)
    options = {"spark.master": m, "spark.app.name": app_name, **tefq_options(m, archive, settings), **dict(settings.conf)}
    with jvm_stderr() as stderr, jvm_scratch():  # the JVM's own "Using incubator modules" notice; its scratch
        launch_driver_jvm(options, stderr)
        with user_settings(settings):
            spark = SparkSession.builder.config(map=options).getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("TEFQ_SPARK_LOG", "OFF").upper())
    return spark
