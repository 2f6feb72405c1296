"""`--remote sc://HOST:PORT` (tefq.spark.runtime.connect, docs/spark-usage.md "Spark Connect"): the
`tefq` command as a client of a real Spark Connect server, started here on loopback from
pyspark's own jars, gets the oracle's rows and fact table, and its bad input and mistakes are
exit 2 naming the option or the row."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

from tests.support.paths import ROOT

UC1, UC2 = str(ROOT / "usecases" / "uc1.tef"), str(ROOT / "usecases" / "uc2.tef")
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180


def tefq(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TEFQ_SERVER": "0", **env})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    """A Spark Connect server on loopback (local[2]; its Python workers are this interpreter, which
    has tefq), as Spark's start-connect-server.sh starts one; its URL."""
    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    port, log = free_port(), tmp_path_factory.mktemp("connect") / "server.log"
    cmd = [os.path.join(home, "bin", "spark-submit"), "--class", SERVER_CLASS, "--master", "local[2]",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2", "spark-internal"]
    env = {**os.environ, "SPARK_HOME": home, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(log.parent),
                                start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening(port):
            assert proc.poll() is None, f"the Spark Connect server exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no Spark Connect server after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Three stream files (ties across files are ranked by the server's own file URIs) and a
    file with a malformed cell, found inside the server's tasks (direct ingestion)."""
    d = tmp_path_factory.mktemp("data")
    done = tefq(["gen", "iptv", "--out", str(d / "iptv"), "--events", "30000", "--users", "3000", "--channels", "12",
                 "--seed", "5"])
    assert done.returncode == 0, done.stderr
    assert len(list((d / "iptv" / "log").glob("*.parquet"))) >= 2
    table = pq.read_table(sorted((d / "iptv" / "log").glob("*.parquet"))[0])
    rows = table.to_pylist()
    rows[100]["o"] = '"not an IRI'
    (d / "bad").mkdir()
    pq.write_table(table.from_pylist(rows, table.schema), d / "bad" / "part-00000.parquet")
    return d


def csv_of(args: list[str], out: Path, ran_on: str, **env) -> str:
    """The CSV the command writes, checking its summary line says which engine ran it."""
    done = tefq([*args, "--out", str(out), "--format", "csv"], **env)
    assert done.returncode == 0, done.stderr
    assert ran_on in done.stderr.strip().splitlines()[-1], done.stderr
    return out.read_text()


@pytest.mark.spark
@pytest.mark.parametrize("query", [UC1, UC2])
def test_a_run_on_a_connect_server_equals_the_oracle(server, data, tmp_path, query) -> None:
    run = ["run", query, "--stream", str(data / "iptv" / "log")]
    remote = csv_of([*run, "--remote", server], tmp_path / "remote.csv", "on Spark (auto, a Spark option)")
    assert remote == csv_of([*run, "--engine", "oracle"], tmp_path / "oracle.csv", "on the oracle")
    assert remote.count("\n") > 100


@pytest.mark.spark
def test_the_endpoint_from_the_environment_and_the_fact_table(server, data, tmp_path) -> None:
    facts = ["facts", UC1, "--stream", str(data / "iptv" / "log")]
    remote = csv_of([*facts, "--engine", "spark"], tmp_path / "remote.csv", "(spark)", TEFQ_SPARK_MASTER=server)
    assert remote == csv_of([*facts, "--engine", "oracle"], tmp_path / "oracle.csv", "(oracle)")


@pytest.mark.spark
def test_a_bad_row_and_a_setting_only_the_server_sets_are_exit_2(server, data) -> None:
    bad = tefq(["run", UC1, "--stream", str(data / "bad"), "--remote", server, "--quiet"])
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.startswith(f"{data / 'bad' / 'part-00000.parquet'}:101: error: row 101, column o"), bad.stderr
    static = tefq(["run", UC1, "--stream", str(data / "iptv" / "log"), "--remote", server, "--conf",
                   "spark.executor.memory=2g", "--quiet"])
    assert static.returncode == 2 and static.stderr.startswith("--conf: error: --conf spark.executor.memory is set "
                                                               "when the Spark Connect server starts"), static.stderr


@pytest.mark.parametrize("args, says", [
    (["--remote", "http://localhost:15002"], "--remote: error: 'http://localhost:15002' is not a Spark Connect endpoint"),
    (["--remote", "sc://localhost:15002", "--master", "local[2]"], "--remote: error: --remote and --master name two"),
    (["--remote", "sc://localhost:15002", "--engine", "oracle"], "--remote: error: --remote applies to the Spark engine only"),
    (["--remote", "sc://localhost:15002", "--driver-memory", "3g"], "--driver-memory: error: --driver-memory is set when"),
])
def test_mistakes_with_remote_are_exit_2_before_any_connection(data, args, says) -> None:
    done = tefq(["run", UC1, "--stream", str(data / "iptv" / "log"), *args, "--quiet"])
    assert done.returncode == 2 and done.stderr.startswith(says), done.stderr


def test_an_endpoint_nobody_serves_is_exit_2_at_once(data) -> None:
    url = f"sc://127.0.0.1:{free_port()}"  # (pyspark's own client would retry it for minutes)
    done = tefq(["run", UC1, "--stream", str(data / "iptv" / "log"), "--remote", url, "--quiet"])
    assert done.returncode == 2 and done.stderr.startswith(f"--remote: error: no Spark Connect server answers at {url}"), \
        done.stderr


def test_a_server_gone_during_a_run_is_one_sentence() -> None:
    """What pyspark's client raises once its retries give up on a server that went away."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from tefq.errors import failure_message

    gone = SparkConnectGrpcException("<_MultiThreadedRendezvous of RPC that terminated with:\n\tstatus = "
                                     "StatusCode.UNAVAILABLE\n\tdetails = \"failed to connect to all addresses\">")
    assert failure_message(gone).startswith("tefq: error: the Spark Connect server stopped answering during the run")
    assert failure_message(SparkConnectGrpcException("[SOMETHING_ELSE] no")).startswith("tefq: internal error")


@pytest.mark.spark
def test_the_client_gives_up_on_a_gone_server_in_seconds(server) -> None:
    """pyspark's client alone retries a call for 10 minutes; tefq's session, GONE_RETRIES times.
    In a process of its own: one with a classic session (another test's) cannot start a remote one."""
    from tefq.spark.runtime.connect import GONE_RETRIES

    code = ("import sys; from tefq.spark.runtime.connect import remote_session; "
            "from tefq.spark.runtime.session import SessionSettings; "
            "spark = remote_session(sys.argv[1], SessionSettings()); "
            "print([p.max_retries for p in spark.client.get_retry_policies()]); spark.stop()")
    done = subprocess.run([sys.executable, "-c", code, server], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([GONE_RETRIES])
