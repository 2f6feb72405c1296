"""The warm engine (tefq.server, docs/spark.md "Warm engine") with real Spark: command lines run
in it at once get the oracle's rows, a failing one and a stopped one leave the others alone, a
crashed engine is replaced without the user seeing it, and no one but its user gets in."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tefq.server import wire
from tefq.server.place import Place, PlaceError, identity, key_of, runtime_dir
from tests.support.paths import ROOT

UC1, UC2 = str(ROOT / "usecases" / "uc1.tef"), str(ROOT / "usecases" / "uc2.tef")
MASTER = "local[2]"
# A Spark SQL setting one run takes in its own session (the other runs keep RocksDB's store)
HDFS_STATE = "spark.sql.streaming.stateStore.providerClass=" \
             "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def tefq(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *args], env=env, capture_output=True, text=True,
                          timeout=600, **kw)


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tefq", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def place_of(env: dict) -> Place:
    return Place(Path(env["TEFQ_SERVER_DIR"]), key_of(identity(MASTER, env)))


def status(env: dict) -> dict | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(place_of(env).socket)
        wire.send(sock, {"op": "ping"})
        return wire.receive(sock)[0]
    except OSError:
        return None
    finally:
        sock.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("data")
    env = {**os.environ, "TEFQ_SERVER": "0"}
    done = tefq(["gen", "iptv", "--out", str(d / "iptv"), "--events", "3000", "--users", "300", "--channels", "10",
                 "--seed", "3"], env)
    assert done.returncode == 0, done.stderr
    table = pq.read_table(next((d / "iptv" / "log").glob("*.parquet")))
    rows = table.to_pylist()
    rows[100]["o"] = '"not an IRI'  # found inside Spark's tasks (direct ingestion reads and checks it)
    (d / "bad").mkdir()
    pq.write_table(table.from_pylist(rows, table.schema), d / "bad" / "part-00000.parquet")
    return d


@pytest.fixture(scope="module")
def engine(data) -> dict:
    """The command lines' environment, with a warm engine of its own (local[2]) started; its
    directory directly under /tmp (pytest's own are closed to other users, which would hide what
    `test_another_user_is_refused` checks)."""
    home = tempfile.mkdtemp(prefix="tefq-test-engines-", dir="/tmp")
    env = {**os.environ, "TEFQ_SERVER": "1", "TEFQ_SERVER_DIR": str(home), "TEFQ_SPARK_MASTER": MASTER,
           "TEFQ_SERVER_IDLE": "5m"}
    done = tefq(["server", "start", "--no-warm-up"], env)
    assert done.returncode == 0, done.stderr
    yield env
    tefq(["server", "stop"], env)
    assert status(env) is None
    shutil.rmtree(home, ignore_errors=True)


def oracle_csv(args: list[str], tmp_path: Path) -> str:
    out = tmp_path / f"oracle-{len(list(tmp_path.iterdir()))}.csv"
    done = tefq([*args, "--engine", "oracle", "--out", str(out), "--quiet"], {**os.environ, "TEFQ_SERVER": "0"})
    assert done.returncode == 0, done.stderr
    return out.read_text()


@pytest.mark.spark
def test_runs_at_once_equal_the_oracle_and_a_failing_one_harms_none(engine, data, tmp_path) -> None:
    log = str(data / "iptv" / "log")
    before = status(engine)["served"]
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    runs = [start(["run", UC1, "--stream", log, "--engine", "spark", "--out", str(a)], engine),
            start(["run", UC2, "--stream", log, "--engine", "spark", "--out", str(b), "--conf", HDFS_STATE], engine),
            start(["run", UC1, "--stream", str(data / "bad"), "--engine", "spark", "--quiet"], engine)]
    done = [(p.wait(timeout=600), *p.communicate()) for p in runs]
    assert done[0][0] == 0 and done[1][0] == 0, [d[2][-2000:] for d in done]
    assert "on Spark (warm)" in done[0][2], done[0][2]  # the summary line says where it ran
    assert done[2][0] == 2 and "part-00000.parquet" in done[2][2] and "Traceback" not in done[2][2], done[2][2]
    assert a.read_text() == oracle_csv(["run", UC1, "--stream", log], tmp_path)
    assert b.read_text() == oracle_csv(["run", UC2, "--stream", log], tmp_path)
    assert status(engine)["served"] == before + 3 and status(engine)["runs"] == 0


@pytest.mark.spark
def test_a_setting_spark_refuses_is_bad_input_in_the_engine_and_without_it(engine, data) -> None:
    """Spark's own refusal of a --conf value is exit 2 naming --conf, whether the warm engine sets
    it on its session or a session starting in the command's process gets it."""
    args = ["run", UC1, "--stream", str(data / "iptv" / "log"), "--engine", "spark", "--quiet",
            "--conf", "spark.sql.shuffle.partitions=abc"]
    before = status(engine)["served"]
    for env in (engine, {**engine, "TEFQ_SERVER": "0"}):
        done = tefq(args, env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("--conf: error: The value 'abc' in the config \"spark.sql.shuffle.partitions\""), \
            done.stderr
    assert status(engine)["served"] == before + 1  # the first in the engine, which goes on


@pytest.mark.spark
def test_ctrl_c_stops_its_own_run_only(engine, data, tmp_path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    (live / "a.parquet").write_bytes(next((data / "iptv" / "log").glob("*.parquet")).read_bytes())
    follow = start(["run", UC1, "--stream", str(live), "--follow", "--out", str(tmp_path / "f.csv")], engine)
    deadline = time.time() + 300
    while time.time() < deadline and status(engine)["runs"] == 0:
        time.sleep(0.2)
    time.sleep(3)  # its queries started in the engine
    follow.send_signal(signal.SIGINT)
    _, err = follow.communicate(timeout=300)
    assert follow.returncode == 130 and "interrupted" in err, err[-2000:]
    deadline = time.time() + 60
    while time.time() < deadline and status(engine)["runs"]:
        time.sleep(0.2)
    out = tmp_path / "after.csv"
    done = tefq(["run", UC1, "--stream", str(data / "iptv" / "log"), "--engine", "spark", "--out", str(out)], engine)
    assert done.returncode == 0 and "on Spark (warm)" in done.stderr, done.stderr[-2000:]


@pytest.mark.spark
def test_a_crashed_engine_is_replaced_unseen(engine, data, tmp_path) -> None:
    info = json.loads(place_of(engine).info.read_text())
    os.killpg(info["pid"], signal.SIGKILL)  # the engine, its JVM and any run: gone at once
    out = tmp_path / "out.csv"
    args = ["run", UC1, "--stream", str(data / "iptv" / "log"), "--engine", "spark", "--out", str(out)]
    done = tefq(args, engine)
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.read_text() == oracle_csv(["run", UC1, "--stream", str(data / "iptv" / "log")], tmp_path)
    assert json.loads(place_of(engine).info.read_text())["pid"] != info["pid"]
    assert "starting the warm engine" in done.stderr
    # it waited for the engine it started: not "warm"; the next run finds it up
    assert "on Spark (warm engine just started)" in done.stderr and "(warm)" not in done.stderr, done.stderr[-2000:]
    done = tefq(args, engine)
    assert done.returncode == 0 and "on Spark (warm)" in done.stderr, done.stderr[-2000:]


SYSTEM_PYTHON = "/usr/bin/python3"  # one the user nobody may run (the venv's may sit in root's home)


def as_nobody(code: str) -> subprocess.CompletedProcess:
    """Python `code` (standard library only) run as the user nobody (the caller is root)."""
    import pwd

    nobody = pwd.getpwnam("nobody")

    def drop() -> None:
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    return subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=drop,
                          cwd="/")


@pytest.mark.spark
@pytest.mark.skipif(os.getuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
                    reason="switching to another uid needs root (and a Python that user may run)")
def test_another_user_is_refused(engine) -> None:
    sock_path = place_of(engine).socket
    probe = ("import socket, struct, json\n"
             "s = socket.socket(socket.AF_UNIX)\n"
             f"try:\n    s.connect({sock_path!r})\nexcept PermissionError:\n    print('no entry'); raise SystemExit\n"
             "m = json.dumps({'op': 'ping'}).encode()\n"
             "try:\n    s.sendall(struct.pack('>I', len(m)) + m)\n"
             "except OSError:\n    pass  # the engine may have answered and hung up already\n"
             "n = struct.unpack('>I', s.recv(4))[0]\nprint(s.recv(n).decode())\n")
    assert as_nobody(probe).stdout.strip() == "no entry"  # the 0700 directory and the 0600 socket
    home = Path(engine["TEFQ_SERVER_DIR"])
    os.chmod(home, 0o755)
    os.chmod(sock_path, 0o666)  # a user who loosened the modes: the engine still checks who calls
    try:
        got = as_nobody(probe)
    finally:
        os.chmod(sock_path, 0o600)
        os.chmod(home, 0o700)
    assert json.loads(got.stdout) == {"error": "refused: another user"}, got.stderr
    assert status(engine)["ready"]


def test_a_directory_others_can_enter_is_not_used(tmp_path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    with pytest.raises(PlaceError, match="not a directory only this user can use"):
        runtime_dir({"TEFQ_SERVER_DIR": str(loose)})
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(PlaceError):
        runtime_dir({"TEFQ_SERVER_DIR": str(tmp_path / "link")})


def test_no_engine_when_switched_off_or_asked_for_another_master(tmp_path, monkeypatch) -> None:
    from tefq.server.client import eligible_master

    env = {**os.environ, "TEFQ_SERVER_DIR": str(tmp_path / "e"), "TEFQ_SERVER": "0"}
    done = tefq(["run", UC1, "--stream", str(tmp_path), "--engine", "oracle", "--quiet"], env)
    assert not (tmp_path / "e").exists() or not list((tmp_path / "e").iterdir()), done.stderr
    assert eligible_master(["run", "q.tef"]) is None  # TEFQ_SERVER=0 (the suite's)
    monkeypatch.setenv("TEFQ_SERVER", "1")
    monkeypatch.delenv("TEFQ_SPARK_MASTER", raising=False)
    assert eligible_master(["run", "q.tef"]) == "local[*]"
    assert eligible_master(["run", "q.tef", "--master", "spark://h:7077"]) is None
    assert eligible_master(["run", "q.tef", "--driver-memory", "8g"]) is None
    assert eligible_master(["run", "q.tef", "--conf", "spark.executor.cores=2"]) is None
    assert eligible_master(["run", "q.tef", "--conf", "spark.sql.shuffle.partitions=3"]) == "local[*]"
    assert eligible_master(["gen", "iptv"]) is None
