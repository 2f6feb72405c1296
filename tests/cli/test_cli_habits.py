"""The command line's habits (issue 41): bare `tefq` prints help; the query from standard input
(`tefq run -`) or inline (`-e TEXT`), never together with `--stream -`; shell completion; Spark
settings as spark-submit users type them (`--conf KEY=VALUE`, `--driver-memory`); `usecase` and
`compare` run the packaged use-cases whatever folder they run in."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tefq.cli import run_command
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
UC1 = SPEC10 / "uc1.tef"
EVENTS = SPEC10 / "events.tsv"


def tefq(*argv, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *map(str, argv)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_bare_tefq_prints_help() -> None:
    proc = tefq()
    assert proc.returncode == 0 and "usage: tefq" in proc.stdout and "first steps:" in proc.stdout
    assert proc.stderr == ""


def test_the_query_from_standard_input_or_inline() -> None:
    want = tefq("run", UC1, "--stream", EVENTS, "--engine", "oracle", "--quiet").stdout
    assert want.count("\n") == 7
    assert tefq("run", "-", "--stream", EVENTS, "--engine", "oracle", "--quiet", stdin=UC1.read_text()).stdout == want
    assert tefq("run", "-e", UC1.read_text(), "--stream", EVENTS, "--engine", "oracle", "--quiet").stdout == want
    parsed = tefq("parse", "-", stdin=UC1.read_text())
    assert parsed.returncode == 0 and "query q1" in parsed.stdout
    bad = tefq("parse", "-e", "SELECT ?x (AGGREGATE ?x, COUNT ?y WHERE ?y <p> ?x")
    assert bad.returncode == 2 and bad.stderr.startswith("<-e>:1:")


def test_standard_input_is_either_the_query_or_the_events() -> None:
    proc = tefq("run", "-", "--stream", "-", "--engine", "oracle", stdin=UC1.read_text())
    assert proc.returncode == 2 and "either the query (tefq run -) or the events (--stream -)" in proc.stderr
    proc = tefq("run", "--stream", EVENTS, "--engine", "oracle")
    assert proc.returncode == 2 and "FILE.tef, as - (standard input) or with -e TEXT" in proc.stderr
    proc = tefq("run", UC1, "-e", "x", "--stream", EVENTS, "--engine", "oracle")
    assert proc.returncode == 2 and "(one of them)" in proc.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_completion_script(shell: str) -> None:
    proc = tefq("completion", shell)
    assert proc.returncode == 0 and "tefq" in proc.stdout and "--stream" in proc.stdout and "usecase" in proc.stdout


def test_spark_settings_are_checked_and_refused_where_they_would_be_dropped(capsys) -> None:
    base = ["run", str(UC1), "--stream", str(EVENTS)]
    assert run_command(base + ["--conf", "novalue"]) == 2
    assert "--conf expects KEY=VALUE" in capsys.readouterr().err
    assert run_command(base + ["--driver-memory", "lots"]) == 2
    assert "expects a size such as 2g" in capsys.readouterr().err
    assert run_command(base + ["--engine", "oracle", "--conf", "spark.sql.shuffle.partitions=3"]) == 2
    assert "--conf applies to the Spark engine only" in capsys.readouterr().err


@pytest.mark.spark
def test_conf_and_driver_memory_reach_the_session(tmp_path) -> None:
    """--conf sets the session the run starts (3 shuffle partitions: three state partitions in the
    checkpoint), and --driver-memory the driver JVM's heap (each in a fresh process: a JVM's
    memory is set when it starts)."""
    ck = tmp_path / "ck"
    proc = tefq("run", UC1, "--stream", EVENTS, "--engine", "spark", "--quiet", "--checkpoint", ck,
                "--conf", "spark.sql.shuffle.partitions=3", "--driver-memory", "1g", "--out", tmp_path / "r.csv")
    assert proc.returncode == 0, proc.stderr[-2000:]
    state = sorted(p.name for p in (ck / "q1" / "checkpoint" / "state" / "0").iterdir() if p.name.isdigit())
    assert state == ["0", "1", "2"]
    manager = "spark.sql.streaming.checkpointFileManagerClass"  # tefq's own setting, overridden too
    probe = ("from tefq.spark.runtime.session import SessionSettings, get_session\n"
             f"s = get_session('local[1]', settings=SessionSettings((('spark.tefq.probe', 'yes'), ('{manager}', 'x.Y')), '1g'))\n"
             f"print(s.conf.get('spark.tefq.probe'), s.conf.get('{manager}'), s.sparkContext.getConf().get('spark.driver.memory'))\n"
             "print(s.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() // (1 << 20))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    settings, heap = out.stdout.split("\n")[:2]
    assert settings == "yes x.Y 1g" and 512 < int(heap) <= 1024


@pytest.mark.spark
def test_checkpoint_files_are_written_through_hadoops_filesystem_api(spark) -> None:
    """Spark's default checkpoint file manager forks `chmod` and `readlink` for every checkpoint file
    where Hadoop's native library is missing (pyspark ships none): ~120 ms of each micro-batch's
    state commit (docs/spark.md "Session", bench/state_commit.py)."""
    from tefq.spark.runtime.session import CHECKPOINT_FILE_MANAGER

    assert spark.conf.get("spark.sql.streaming.checkpointFileManagerClass") == CHECKPOINT_FILE_MANAGER
    assert CHECKPOINT_FILE_MANAGER.rsplit(".", 1)[1] == "FileSystemBasedCheckpointFileManager"


def test_usecase_and_compare_use_the_packaged_use_cases_wherever_they_run(tmp_path) -> None:
    (tmp_path / "usecases").mkdir()
    (tmp_path / "usecases" / "uc1.tef").write_text("not a query")  # a folder of one's own, not the paper's
    data = tmp_path / "iptv"
    assert tefq("gen", "iptv", "--out", data, "--events", "400", "--users", "40", "--channels", "4", "--epg",
                cwd=tmp_path).returncode == 0
    proc = tefq("usecase", "uc1", "--data", data, "--engine", "oracle", "--out", tmp_path / "u.csv", cwd=tmp_path)
    assert proc.returncode == 0 and "tefq/usecases/uc1.tef" in proc.stderr, proc.stderr
    proc = tefq("compare", "--usecase", "uc1", "--stream", data, "--windows", "100s", "--approaches", "tef,refresh",
                "--quiet", cwd=tmp_path)
    assert proc.returncode == 0 and "refresh" in proc.stdout, proc.stderr
    own = tmp_path / "mine.tef"
    own.write_text(UC1.read_text().replace('"PT5S"', '"PT20S"'))
    proc = tefq("compare", "--usecase", "uc1", "--query", own, "--stream", data, "--windows", "100s",
                "--approaches", "tef", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # a path given: that document
