"""The driver JVM's class-data-sharing archive: its key, its lookup, its creation when two processes
create it at once, and (real Spark) that a corrupt or foreign archive never fails a run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tefq import jvm_archive_setup
from tefq.spark.runtime import jvm_archive

UC1 = Path(jvm_archive_setup.USECASES) / "uc1.tef"


def fake_jdk(root: Path) -> Path:
    for name in jvm_archive.JDK_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"jdk")
    return root


def fake_jars(root: Path, names=("spark-core.jar", "spark-sql.jar")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_bytes(b"jar " + name.encode())
    return root


def test_the_key_changes_with_the_jars_the_jdk_and_the_classpath_variables(tmp_path, monkeypatch):
    jdk, jars = fake_jdk(tmp_path / "jdk"), fake_jars(tmp_path / "jars")
    key = jvm_archive.archive_key(jdk, jars)
    assert key == jvm_archive.archive_key(jdk, jars)
    keys = {key}
    (jars / "extra.jar").write_bytes(b"another jar")  # a jar added
    keys.add(jvm_archive.archive_key(jdk, jars))
    (jars / "spark-core.jar").write_bytes(b"a new spark-core")  # a jar replaced
    keys.add(jvm_archive.archive_key(jdk, jars))
    (jdk / "lib/server/libjvm.so").write_bytes(b"an updated JVM")  # the JDK updated
    keys.add(jvm_archive.archive_key(jdk, jars))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--jars x.jar pyspark-shell")  # the launcher's classpath
    keys.add(jvm_archive.archive_key(jdk, jars))
    moved = shutil.copytree(jars, tmp_path / "other-venv-jars", copy_function=os.link)  # same jars, other path
    keys.add(jvm_archive.archive_key(jdk, moved))
    assert len(keys) == 6


def test_the_key_follows_java_home(tmp_path, monkeypatch):
    jars = fake_jars(tmp_path / "jars")
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "jdk-a")))
    a = jvm_archive.archive_key(jars=jars)
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "jdk-b")))
    assert jvm_archive.archive_key(jars=jars) != a
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert jvm_archive.archive_key(jars=jars) is None


def test_only_a_file_of_the_size_its_name_records_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_archive, "archive_key", lambda *a: "k")
    directory = jvm_archive.archive_dir()
    directory.mkdir(parents=True)
    (directory / jvm_archive.archive_name("k", 100)).write_bytes(b"x" * 60)  # truncated: would crash the JVM
    assert jvm_archive.find_archive("k") is None
    assert jvm_archive.driver_options() == []
    good = directory / jvm_archive.archive_name("k", 5)
    good.write_bytes(b"12345")
    assert jvm_archive.find_archive("k") == good
    assert jvm_archive.driver_options() == [f"-XX:SharedArchiveFile={good}", *jvm_archive.SAFETY_OPTIONS]
    monkeypatch.setenv("TEFQ_CDS", "0")
    assert jvm_archive.driver_options() == []


def test_two_creators_at_once_leave_one_complete_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_archive, "archive_key", lambda *a: "k")
    dumping, release = threading.Event(), threading.Event()
    dumped: list[Path] = []

    def slow_dump(target: Path) -> bool:  # the first creator, holding the lock while it writes
        dumped.append(target)
        target.write_bytes(b"half")
        dumping.set()
        release.wait(60)
        with open(target, "ab") as f:
            f.write(b" and the rest")
        return True

    first: list[Path | None] = []
    writer = threading.Thread(target=lambda: first.append(jvm_archive_setup.ensure_archive(slow_dump)))
    writer.start()
    assert dumping.wait(60)
    second_dump_called = []
    second = jvm_archive_setup.ensure_archive(lambda t: second_dump_called.append(t) or True)
    assert second is None and second_dump_called == []  # the lock is held: no second writer
    assert jvm_archive.find_archive("k") is None  # nothing half-written under the final name
    release.set()
    writer.join(60)
    files = sorted(p.name for p in jvm_archive.archive_dir().iterdir() if not p.name.endswith(".lock"))
    assert files == [jvm_archive.archive_name("k", len(b"half and the rest"))]
    assert first == [jvm_archive.find_archive("k")]
    assert jvm_archive.find_archive("k").read_bytes() == b"half and the rest"
    assert not dumped[0].parent.exists()  # the private scratch directory is gone
    assert jvm_archive_setup.ensure_archive(slow_dump) == first[0]  # a later call finds it


def test_a_failed_dump_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_archive, "archive_key", lambda *a: "k")
    assert jvm_archive_setup.ensure_archive(lambda t: t.write_bytes(b"bad") and False) is None
    with pytest.raises(OSError):
        jvm_archive_setup.ensure_archive(lambda t: (_ for _ in ()).throw(OSError("disk full")))
    assert [p.name for p in jvm_archive.archive_dir().iterdir()] == ["spark-driver-k.lock"]


def other_archive(directory: Path, key: str, days_ago: float, now: float) -> Path:
    """An archive of another venv or JDK, last mapped `days_ago`."""
    path = directory / jvm_archive.archive_name(key, 3)
    path.write_bytes(b"old")
    lock = jvm_archive.lock_path(key, directory)
    lock.touch()
    for p in (path, lock):
        os.utime(p, (now - days_ago * 86400, now - days_ago * 86400))
    return path


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    """An empty archive directory; this JDK's and these jars' key is "k"."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_archive, "archive_key", lambda *a: "k")
    directory = jvm_archive.archive_dir()
    directory.mkdir(parents=True)
    return directory


def test_a_new_archive_prunes_the_ones_unused_longest(cache):
    directory, now = cache, time.time()
    recent, older, oldest = (other_archive(directory, k, d, now) for k, d in (("a", 1), ("b", 2), ("c", 3)))
    stale = other_archive(directory, "d", jvm_archive_setup.STALE_DAYS + 1, now)
    busy = other_archive(directory, "e", 5, now)  # being written again elsewhere: its lock is held
    with jvm_archive_setup.locked("e", directory) as held:
        assert held
        made = jvm_archive_setup.ensure_archive(lambda t: t.write_bytes(b"new") or True)
    assert made == jvm_archive.find_archive("k")
    left = sorted(p.name for p in directory.iterdir())
    assert left == sorted([made.name, "spark-driver-k.lock", recent.name, "spark-driver-a.lock", older.name,
                           "spark-driver-b.lock", busy.name, "spark-driver-e.lock"])
    assert not oldest.exists() and not stale.exists()


def test_a_run_that_maps_an_archive_marks_it_used(cache):
    directory, now = cache, time.time()
    other_archive(directory, "k", 40, now)
    assert jvm_archive.driver_options()
    assert now - jvm_archive_setup.last_use("k", directory) < 60  # kept by the next pruning
    assert jvm_archive_setup.prune(directory, "new", now) == []


def test_the_setup_command_never_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def broken(dump=None):
        raise RuntimeError("no JVM today")

    monkeypatch.setattr(jvm_archive_setup, "ensure_archive", broken)
    assert jvm_archive_setup.main([]) == 0
    assert "Spark starts without it" in capsys.readouterr().err
    monkeypatch.setenv("TEFQ_CDS", "0")
    assert jvm_archive_setup.main([]) == 0
    assert "TEFQ_CDS=0" in capsys.readouterr().err


# --- real Spark: a driver JVM started with a real, a corrupt and a random archive ---

def tefq(*argv: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *argv], capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, XDG_CACHE_HOME=str(cache), **env), stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def real_archive(tmp_path_factory) -> Path:
    """This JDK's and these jars' archive: the one `make setup` wrote, else one written here."""
    if not jvm_archive.enabled():
        pytest.skip("TEFQ_CDS=0")
    key = jvm_archive.archive_key()
    if key is None:
        pytest.skip("no JDK or Spark jars")
    if jvm_archive.archive_dir().is_dir() and jvm_archive.find_archive(key):
        return jvm_archive.find_archive(key)
    cache = tmp_path_factory.mktemp("cds-cache")
    done = subprocess.run([sys.executable, "-m", "tefq.jvm_archive_setup"], capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, XDG_CACHE_HOME=str(cache)))
    assert done.returncode == 0, done.stderr
    made = jvm_archive.find_archive(key, cache / "tefq")
    assert made is not None, done.stderr
    return made


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cds-stream") / "log"
    done = tefq("gen", "iptv", "--out", str(out), "--events", "400", "--users", "400", "--channels", "8",
                "--seed", "3", cache=out.parent)
    assert done.returncode == 0, done.stderr
    return out


def installed(archive: Path, cache: Path, body: bytes | None = None) -> Path:
    """`archive` (or `body`) under `cache` with the name this JDK's and these jars' archive has."""
    data = archive.read_bytes() if body is None else body
    directory = cache / "tefq"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / jvm_archive.archive_name(jvm_archive.archive_key(), len(data))
    path.write_bytes(data)
    return path


def mapped(log: Path) -> bool:
    """Whether the JVM that wrote `log` (-Xlog:class+load, to a file) loaded classes from a dynamic
    archive (a damaged one is mapped, fails its checksum and is unmapped before any class loads)."""
    return log.is_file() and "source: shared objects file (top)" in log.read_text(errors="replace")


def run_uc1(stream: Path, cache: Path, log: Path, **env: str) -> subprocess.CompletedProcess:
    """UC1 on Spark, its rows on stdout; the driver JVM logs where each class came from to `log`."""
    return tefq("run", str(UC1), "--stream", str(stream), "--engine", "spark", cache=cache,
                JAVA_TOOL_OPTIONS=f"-Xlog:class+load=info:file={log}", **env)


@pytest.fixture(scope="module")
def without_archive(real_archive, stream, tmp_path_factory) -> tuple[str, Path]:
    """UC1's rows with TEFQ_CDS=0 (the archive in place but not used), and its class-load log."""
    cache = tmp_path_factory.mktemp("cds-off")
    installed(real_archive, cache)
    log = cache / "without.log"
    want = run_uc1(stream, cache, log, TEFQ_CDS="0")
    assert want.returncode == 0, want.stderr
    assert want.stdout.count("\n") > 10 and "no start-up archive" not in want.stderr
    return want.stdout, log


@pytest.mark.spark
def test_a_run_maps_the_archive_and_gives_the_same_rows(real_archive, stream, without_archive, tmp_path):
    cache = tmp_path / "real"
    installed(real_archive, cache)
    got = run_uc1(stream, cache, tmp_path / "with.log")
    assert got.returncode == 0, got.stderr
    assert got.stdout == without_archive[0]
    assert mapped(tmp_path / "with.log") and not mapped(without_archive[1])
    assert "no start-up archive" not in got.stderr


@pytest.mark.spark
def test_a_cold_start_without_an_archive_says_how_to_write_one(stream, without_archive, tmp_path):
    """Once, as a progress line; not when the archive is switched off (TEFQ_CDS=0: `without_archive`)."""
    got = run_uc1(stream, tmp_path / "empty-cache", tmp_path / "none.log", TEFQ_SERVER="0")
    assert got.returncode == 0, got.stderr
    assert got.stdout == without_archive[0]
    note = "[spark] no start-up archive for this Java and Spark: `python -m tefq.jvm_archive_setup`"
    assert got.stderr.count(note) == 1, got.stderr


@pytest.mark.spark
def test_a_corrupt_or_foreign_archive_does_not_fail_a_run(real_archive, stream, without_archive, tmp_path):
    flipped = bytearray(real_archive.read_bytes())
    middle = len(flipped) // 2
    flipped[middle:middle + 4096] = b"\xde\xad\xbe\xef" * 1024  # a damaged region, header intact
    bodies = {"flipped": bytes(flipped)}
    if os.environ.get("TEFQ_FAULTS_LONG") == "1":  # make test-faults: also a foreign file (make test: 20 min)
        bodies["random"] = os.urandom(1 << 20)
    for name, body in bodies.items():
        installed(real_archive, tmp_path / name, body)
        got = run_uc1(stream, tmp_path / name, tmp_path / f"{name}.log")
        assert got.returncode == 0, (name, got.stderr)
        assert got.stdout == without_archive[0], name  # the same rows, and no JVM warning among them
        assert "shared archive" not in got.stderr, name
        assert not mapped(tmp_path / f"{name}.log"), name
