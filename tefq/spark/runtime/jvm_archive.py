"""Where the driver JVM's class-data-sharing (CDS) archive lives, and the options that use it.

Loading and verifying Spark's classes is most of the driver JVM's start-up (docs/spark.md,
"Start-up"). A dynamic CDS archive (`-XX:ArchiveClassesAtExit`, written by
tefq.jvm_archive_setup) holds them ready to map. It is valid for one JDK build and one
classpath only, so its file name carries a hash of both: the JDK's files, Spark's jars (names,
sizes, times, in the directory order the JVM expands `jars/*` in) and the variables Spark's launcher
builds the classpath from. A changed JDK or pyspark then looks for another file and finds none.

What the JVM does with a bad archive (Java 17, `-Xshare` left at auto, measured): a mismatched
classpath or JDK, a missing file, random bytes, a flipped region under `-XX:+VerifySharedSpaces`:
the archive is ignored and the run goes on (with a warning on stdout, which `-Xlog:cds*=off`
silences: stdout may be the run's CSV). A truncated archive crashes the JVM (SIGBUS), so the name
also carries the file's size and a file of another size is not used.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

FORMAT = "1"  # bump when the archive's workload or options change: older files are then not used
DISABLE_VARIABLE = "TEFQ_CDS"  # TEFQ_CDS=0: neither use nor create an archive
# Spark's launcher (AbstractCommandBuilder.buildClassPath) puts these on the driver's classpath;
# PYSPARK_SUBMIT_ARGS may add jars (--jars, --packages, --driver-class-path).
CLASSPATH_VARIABLES = ("SPARK_HOME", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH",
                       "SPARK_CLASSPATH", "SPARK_PREPEND_CLASSES", "PYSPARK_SUBMIT_ARGS")
JDK_FILES = ("bin/java", "lib/server/libjvm.so", "lib/modules", "lib/server/classes.jsa")
# Ignored when unusable, its messages off, its regions' checksums verified when mapped.
SAFETY_OPTIONS = ("-Xshare:auto", "-XX:+VerifySharedSpaces", "-Xlog:cds*=off")


def enabled() -> bool:
    return os.environ.get(DISABLE_VARIABLE, "1").strip().lower() not in ("0", "no", "off", "false")


def archive_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tefq"


def java_home() -> Path | None:
    """The JDK Spark's launcher starts: `$JAVA_HOME/bin/java`, else `java` on the PATH (spark-class)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.isfile(java):
        return None
    return Path(os.path.realpath(java)).parent.parent


def spark_jars_dir() -> Path | None:
    """`$SPARK_HOME/jars`, else the jars pyspark ships (pyspark's own rule for SPARK_HOME)."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = os.path.dirname(pyspark.__file__)
    jars = Path(home) / "jars"
    return jars if jars.is_dir() else None


def file_identity(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path} -"
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def archive_key(jdk: Path | None = None, jars: Path | None = None) -> str | None:
    """A hash of everything the archive's validity depends on; None without a JDK or Spark's jars."""
    jdk = jdk or java_home()
    jars = jars or spark_jars_dir()
    if jdk is None or jars is None:
        return None
    lines = [f"tefq-cds {FORMAT}"]
    lines += [file_identity(jdk / name) for name in JDK_FILES]
    lines += [file_identity(jars / name) for name in os.listdir(jars)]  # directory order: the JVM's
    lines += [f"{name}={os.environ.get(name, '')}" for name in CLASSPATH_VARIABLES]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()[:20]


def archive_name(key: str, size: int) -> str:
    return f"spark-driver-{key}-{size}.jsa"


def find_archive(key: str, directory: Path | None = None) -> Path | None:
    """The complete archive for `key`: a file whose size is the one its name records."""
    directory = directory or archive_dir()
    for path in sorted(directory.glob(f"spark-driver-{key}-*.jsa")):
        recorded = path.name[len(f"spark-driver-{key}-"):-len(".jsa")]
        try:
            if recorded.isdigit() and path.stat().st_size == int(recorded):
                return path
        except OSError:  # removed meanwhile
            continue
    return None


def usable(path: Path) -> bool:
    # spark.driver.extraJavaOptions is split at spaces (quotes aside): keep to plain paths.
    return not any(c.isspace() or c in "\"'\\" for c in str(path))


def driver_options() -> list[str]:
    """The driver JVM's options that map this JDK's and these jars' archive; none without one."""
    if not enabled():
        return []
    key = archive_key()
    path = find_archive(key) if key else None
    if path is None or not usable(path):
        return []
    mark_used(key, path.parent)
    return [f"-XX:SharedArchiveFile={path}", *SAFETY_OPTIONS]


def lock_path(key: str, directory: Path) -> Path:
    """The key's lock: held while its archive is written; its modification time is its last use."""
    return directory / f"spark-driver-{key}.lock"


def mark_used(key: str, directory: Path) -> None:
    """Record that a JVM maps the key's archive (the archive itself is read-only): set-ups prune
    the archives unused longest (tefq.jvm_archive_setup.prune)."""
    try:
        lock_path(key, directory).touch()
    except OSError:  # a read-only cache: the archive is still used, only not kept by its use
        pass


def dump_options(target: Path) -> list[str]:
    """The options of the one JVM that writes an archive at its exit."""
    return [f"-XX:ArchiveClassesAtExit={target}", "-Xlog:cds*=off"]
