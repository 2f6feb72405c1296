"""The Spark installation tefq starts its driver JVM from: pyspark's own, less its ML jars.

A new SparkSession applies every session extension Java's ServiceLoader finds on the classpath.
pyspark ships one, in spark-mllib: `org.apache.spark.sql.ml.InternalFunctionRegistration`, which
builds its functions (vector_to_array and two more, for Spark ML) with Scala reflection, whose
start-up is most of a new session's time in the JVM (measured: docs/bench/2026-11-30-oracle-operands.md).
tefq calls none of them, so it starts Spark from a directory of its own beside the start-up
archive (`jvm_archive.archive_dir`): a link to every entry of pyspark's directory but `jars/`,
and a `jars/` linking every jar but spark-mllib's. Nothing in pyspark's directory is changed.

A SPARK_HOME already set (by the user, or by the tefq process that started this one) is used as it
is; `TEFQ_SPARK_HOME=pyspark` starts Spark from pyspark's own directory. Where the directory cannot
be made (a read-only cache), Spark starts from pyspark's own.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from tefq.spark.runtime import jvm_archive

VARIABLE = "TEFQ_SPARK_HOME"
LEFT_OUT = ("spark-mllib_", "spark-mllib-local_")  # the jars that bring the ML session extension
PREFIX = "spark-home-"


def use_lean_home() -> None:
    """Point SPARK_HOME at `lean_home()` unless it is set already or TEFQ_SPARK_HOME=pyspark: before
    the driver JVM starts and before its start-up archive is looked for (the archive is valid for
    one classpath only)."""
    if os.environ.get("SPARK_HOME") or os.environ.get(VARIABLE, "").strip().lower() == "pyspark":
        return
    home = lean_home()
    if home is not None:
        os.environ["SPARK_HOME"] = str(home)


def lean_home(pyspark_home: Path | None = None, directory: Path | None = None) -> Path | None:
    """The directory for this pyspark (made the first time, atomically); None where pyspark has no
    ML jars or the directory cannot be made."""
    if pyspark_home is None:
        import pyspark

        pyspark_home = Path(pyspark.__file__).parent
    jars = pyspark_home / "jars"
    try:
        names = sorted(os.listdir(jars))
    except OSError:
        return None
    if not any(n.startswith(LEFT_OUT) for n in names):
        return None
    directory = directory or jvm_archive.archive_dir()
    key = hashlib.sha256("\n".join([str(pyspark_home), *names]).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    target = directory / f"{PREFIX}{key}"
    if not (target / "jars").is_dir():
        try:
            made = _made(pyspark_home, names, directory)
        except OSError:
            return None
        try:
            os.rename(made, target)  # one step; another process may have put it there first
        except OSError:
            shutil.rmtree(made, ignore_errors=True)
        _prune(directory, keep=target)
    return target if (target / "jars").is_dir() else None


def _made(pyspark_home: Path, names: list[str], directory: Path) -> Path:
    """The links in a private directory of `directory`, to be renamed into place."""
    directory.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{PREFIX}", dir=directory))
    try:
        for entry in os.listdir(pyspark_home):
            if entry != "jars":
                (scratch / entry).symlink_to(pyspark_home / entry)
        (scratch / "jars").mkdir()
        for name in names:
            if not name.startswith(LEFT_OUT):
                (scratch / "jars" / name).symlink_to(pyspark_home / "jars" / name)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch


def _prune(directory: Path, keep: Path) -> None:
    """Remove the directories of pyspark installations that are gone (their links lead nowhere)."""
    for other in directory.glob(f"{PREFIX}*"):
        bin_link = other / "bin"
        if other != keep and bin_link.is_symlink() and not bin_link.exists():
            shutil.rmtree(other, ignore_errors=True)
