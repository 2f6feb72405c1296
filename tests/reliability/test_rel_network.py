"""Issue 26, case 4: no query reaches the network. `SERVICE <url>` made the windowed oracle POST the
stream's bindings to `url` (exit 0) while Spark refused it; now it is exit 2 at FILE:LINE:COL when
the document is bound, on every engine, before any input is read. A real listener on 127.0.0.1
must receive nothing. (rdflib 7 fetches nothing else a query can name: tefq.analysis.network.)"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tefq.analysis.network import keyword_offset
from tefq.errors import TefqError

pytestmark = pytest.mark.reliability

TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
X = "http://example.org/iptv#"

RSPQL = """PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <out> AS
SELECT ?channel ?x
FROM NAMED WINDOW <w> ON <http://example.org/iptv/log> [RANGE PT10S]
WHERE {{
  WINDOW <w> {{ ?u :join ?channel }}
  {pattern}
}}
"""
PATTERNS = {
    "optional": "OPTIONAL {{ SERVICE <{url}> {{ ?channel ?p ?x }} }}",
    "silent": "OPTIONAL {{ SERVICE SILENT <{url}> {{ ?channel ?p ?x }} }}",
    "lower_case": "OPTIONAL {{ service <{url}> {{ ?channel ?p ?x }} }}",
    "subquery": "OPTIONAL {{ SELECT ?channel ?x WHERE {{ SERVICE <{url}> {{ ?channel ?p ?x }} }} }}",
    "exists": "FILTER EXISTS {{ SERVICE <{url}> {{ ?channel ?p ?x }} }}",
    "after_decoys": "BIND(\"SERVICE\" AS ?x) # SERVICE\n  SERVICE <{url}> {{ ?channel ?p ?x }}",
}
REAL = re.compile(r"\bSERVICE\s+(?:SILENT\s+)?<", re.I)  # the construct, not the decoys


def where(text: str) -> tuple[int, int]:
    """(line, column) of the SERVICE construct in a document."""
    for n, line in enumerate(text.splitlines(), 1):
        m = REAL.search(line)
        if m:
            return n, m.start() + 1
    raise AssertionError("no SERVICE")


@pytest.fixture
def listener() -> Iterator[tuple[str, socket.socket]]:
    """A TCP listener on 127.0.0.1 (a free port); yields its URL and the socket."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/sparql", sock
    finally:
        sock.close()


def nothing_received(sock: socket.socket) -> bool:
    """No connection is waiting (the run is over: anything it sent would be queued by now)."""
    sock.setblocking(False)
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


def stream(tmp_path) -> str:
    path = tmp_path / "s.tsv"
    path.write_text("ts\ts\tp\to\n" + "".join(f"{1000 + i * 500}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 3}>\n"
                                             for i in range(30)))
    return str(path)


@pytest.mark.parametrize("engine", ["oracle", "auto", "spark"])
@pytest.mark.parametrize("case", PATTERNS)
def test_service_is_refused_at_bind_time(tmp_path, listener, case, engine) -> None:
    url, sock = listener
    query = tmp_path / "q.rspql"
    query.write_text(RSPQL.format(pattern=PATTERNS[case].format(url=url)))
    line, column = where(query.read_text())
    r = subprocess.run(TEFQ + ["run", str(query), "--engine", engine, "--stream", stream(tmp_path), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"{query}:{line}:{column}: error: SERVICE is not supported" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "[spark]" not in r.stderr  # refused before Spark starts
    assert nothing_received(sock)


def test_parse_refuses_service_too(tmp_path, listener) -> None:
    url, sock = listener
    query = tmp_path / "q.rspql"
    query.write_text(RSPQL.format(pattern=f"SERVICE <{url}> {{ ?channel ?p ?x }}"))
    r = subprocess.run(TEFQ + ["parse", str(query)], capture_output=True, text=True)
    assert r.returncode == 2 and f"{query}:7:3: error: SERVICE" in r.stderr, r.stderr
    assert nothing_received(sock)


def test_the_oracles_own_query_reader_refuses_service(tmp_path, listener) -> None:
    """`tefq oracle` reads C-SPARQL / CSRBench text without the bind step: its evaluator refuses
    SERVICE when it prepares the query, before any window."""
    from tefq.oracle.windowed.query import load_query
    from tefq.oracle.windowed.r2r import Evaluator

    url, sock = listener
    path = tmp_path / "q.query"
    path.write_text(f"REGISTER QUERY q AS\nPREFIX : <{X}>\nSELECT ?c ?x\n"
                    "FROM STREAM <http://example.org/iptv/log> [RANGE 10s STEP 10s]\n"
                    f"WHERE {{ ?u :join ?c . OPTIONAL {{ SERVICE <{url}> {{ ?c ?p ?x }} }} }}\n")
    q = load_query(path)
    with pytest.raises(TefqError) as e:
        Evaluator(q.sparql, q.source)
    assert (e.value.file, e.value.line, e.value.column) == (str(path), *where(path.read_text()))
    assert "SERVICE is not supported" in e.value.message
    assert nothing_received(sock)


DECOYS = "<http://x/SERVICE> ?SERVICE $SERVICE ex:SERVICE :SERVICE 'SERVICE' \"SERVICE\" \"\"\"SERVICE\"\"\""


@pytest.mark.parametrize("text,offset", [
    ("SERVICE <u> {}", 0),
    ("# SERVICE\nservice <u> {}", 10),
    (DECOYS + " SERVICE", len(DECOYS) + 1),
    ("'''a\nSERVICE''' SERVICE", 16),
    ("SERVICES", -1),
])
def test_the_keyword_is_found_outside_comments_strings_iris_and_names(text, offset) -> None:
    assert keyword_offset(text, "SERVICE") == offset
