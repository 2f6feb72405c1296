"""Where a user's warm engines live, and which one fits a command line. Standard library only:
the command line asks this before it imports anything heavy.

* **The directory**: `$TEFQ_SERVER_DIR`, else `$XDG_RUNTIME_DIR/tefq`, else `<tmp>/tefq-<uid>`;
  made 0700, and refused unless it is a real directory owned by this user that no one else can
  enter (another user's planted directory or symlink is never used).
* **The identity** of an engine: this interpreter, the tefq code it runs (every source file's
  size and modification time), pyspark's, the `java` Spark would start, the master, and the
  environment variables that shape Spark or tefq's workers (`TEFQ_*`, `SPARK_*`, `PYSPARK_*`,
  `JAVA_*`, `HADOOP_*`, `PYTHON*`; not the SPARK_HOME tefq sets itself). A command line uses an
  engine of the same identity only: an edited file, another venv or another setting starts a
  fresh engine, and the stale one is stopped.
* **The files** of one engine, named by its identity's hash: `<key>.sock` (the unix socket,
  0600), `<key>.json` (what `tefq server status` shows), `<key>.log` (the engine's own stderr),
  `<key>.lock` (held while it starts).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DIR_VARIABLE = "TEFQ_SERVER_DIR"
SWITCH_VARIABLE = "TEFQ_SERVER"  # 0 / off / no / false: no warm engine
IDLE_VARIABLE = "TEFQ_SERVER_IDLE"  # how long an engine waits for work before it stops (a duration)
SHAPING_PREFIXES = ("TEFQ_", "SPARK_", "PYSPARK_", "JAVA_", "_JAVA_", "HADOOP_", "PYTHON")
# Set by tefq itself for every session, or about the warm engine / the command line only.
NOT_SHAPING = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", SWITCH_VARIABLE, DIR_VARIABLE, IDLE_VARIABLE,
               "TEFQ_DEBUG", "TEFQ_TEST_PROCESSES"}
SOURCE_SUFFIXES = (".py", ".lark", ".properties")
# The SPARK_HOME tefq sets itself where none is set (tefq.spark.runtime.spark_home.PREFIX, named
# here to keep this module standard library only): the same for every command line of this pyspark.
OWN_SPARK_HOME_PREFIX = "spark-home-"


class PlaceError(Exception):
    """The engines' directory cannot be used safely (the command line then runs without one)."""


def enabled(env: dict[str, str] | os._Environ = os.environ) -> bool:
    return env.get(SWITCH_VARIABLE, "1").strip().lower() not in ("0", "off", "no", "false")


def runtime_dir(env: dict[str, str] | os._Environ = os.environ) -> Path:
    """The user's engines' directory, made 0700 if absent; PlaceError unless only this user can use it."""
    base = env.get(DIR_VARIABLE)
    if base:
        path = Path(base)
    elif env.get("XDG_RUNTIME_DIR"):
        path = Path(env["XDG_RUNTIME_DIR"]) / "tefq"
    else:
        path = Path(tempfile.gettempdir()) / f"tefq-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as e:
        raise PlaceError(f"cannot make {path}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PlaceError(f"{path} is not a directory only this user can use (mode {oct(st.st_mode & 0o777)}, "
                         f"owner {st.st_uid})")
    return path


def code_fingerprint() -> str:
    """The tefq code this interpreter would run: every source file's path, size and time."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(str(root).encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def pyspark_fingerprint() -> str:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return "none"
    version = Path(spec.origin).with_name("version.py")
    st = os.stat(version) if version.exists() else os.stat(spec.origin)
    return f"{spec.origin}:{st.st_size}:{st.st_mtime_ns}"


def identity(master: str, env: dict[str, str] | os._Environ = os.environ) -> dict:
    """What an engine must share with a command line to run it (see the module doc)."""
    shaping = {k: v for k, v in env.items() if k.startswith(SHAPING_PREFIXES) and k not in NOT_SHAPING
               and not (k == "SPARK_HOME" and is_own_spark_home(v))}
    java = shutil.which("java", path=env.get("PATH"))
    return {"uid": os.getuid(), "python": os.path.realpath(sys.executable), "tefq": code_fingerprint(),
            "pyspark": pyspark_fingerprint(), "java": os.path.realpath(java) if java else None,
            "master": master, "env": sorted(shaping.items())}


def is_own_spark_home(path: str) -> bool:
    """Whether SPARK_HOME is the directory tefq made (a command line that started Spark in its own
    process has it set; one that did not, has not)."""
    return os.path.basename(path.rstrip("/")).startswith(OWN_SPARK_HOME_PREFIX) and os.path.islink(os.path.join(path, "bin"))


def key_of(ident: dict) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Place:
    """The files of the engine with identity hash `key` in `directory`."""

    directory: Path
    key: str

    @property
    def socket(self) -> str:
        return str(self.directory / f"{self.key}.sock")

    @property
    def info(self) -> Path:
        return self.directory / f"{self.key}.json"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.key}.lock"

    @classmethod
    def all(cls, directory: Path) -> list["Place"]:
        """Every engine that left files in `directory` (running or not)."""
        keys = {p.name.split(".")[0] for p in directory.iterdir() if p.suffix in (".sock", ".json")}
        return [cls(directory, k) for k in sorted(keys)]
