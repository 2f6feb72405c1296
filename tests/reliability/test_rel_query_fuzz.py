"""Issue 17: random mutations of the example queries through `tefq parse` end in exit 0 or a located
exit 2, never a traceback, and within a memory and CPU bound (RLIMIT_AS / RLIMIT_CPU on the
subprocess that parses them all, so nothing here is a timed assert)."""
from __future__ import annotations

import glob
import json
import os
import random
import resource
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

LONG = os.environ.get("TEFQ_FAULTS_LONG") == "1"
CASES = 3000 if LONG else 150
MEMORY = 1 << 30  # bytes of address space for the whole batch
CPU_SECONDS = 600 if LONG else 120
PIECES = ["(", ")", "{", "}", "[", "]", "?x", "?", "<", ">", '"', "'", "AGGREGATE", "EVERY", "WHILE", "CURRENT",
          "SINCE", "UNTIL", "UNION", "GROUP BY", "COUNT", "SUM", "DURATION(", "PT0S", "P0D", "-1", "9" * 40,
          "\\u0000", "\x00", "\ud800", "é", "#", "\n", ";", ".", ",", "^^", "xsd:Duration", "FILTER(", "AS",
          "PREFIX", ":", "_:b", "1e999", "REGISTER QUERY ", "CONSTRUCT FACT", "x" * 1000]
# A child that parses every file with tefq's own entry point and reports the exit code and stderr.
CHILD = """
import contextlib, io, json, sys
from tefq.cli import run_command
out = []
for path in sys.argv[1:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run_command(["parse", path])
    text = err.getvalue()
    errors = [line[:300] for line in text.splitlines() if ": error: " in line]
    out.append((path, code, errors, "Traceback" in text or "internal error" in text))
print(json.dumps(out))
"""


def examples() -> list[str]:
    files = sorted(glob.glob(os.path.join(ROOT, "usecases", "*.tef")) + glob.glob(os.path.join(ROOT, "examples", "**", "*.tef"), recursive=True))
    return [open(f, encoding="utf-8").read() for f in files]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(text) + 1)
        op = rng.choice(["insert", "delete", "duplicate", "swap_lines"])
        if op == "insert":
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + rng.randint(1, 20):]
        elif op == "duplicate":
            j = min(len(text), i + rng.randint(1, 40))
            text = text[:j] + text[i:j] + text[j:]
        else:
            lines = text.split("\n")
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text


def limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def test_mutated_queries_parse_or_fail_located(tmp_path) -> None:
    rng = random.Random(17)
    sources = examples()
    assert sources
    paths = []
    for i in range(CASES):
        f = tmp_path / f"m{i}.tef"
        f.write_bytes(mutate(rng.choice(sources), rng).encode("utf-8", "surrogatepass"))
        paths.append(str(f))
    # Big inputs: a 1 MB token and a 1 MB IRI must not take gigabytes.
    big = sources[0]
    for name, text in (("token", big.replace("?channel", "?" + "c" * (1 << 20), 1)),
                       ("iri", big.replace("<http://", "<http://" + "a" * (1 << 20), 1))):
        f = tmp_path / f"big-{name}.tef"
        f.write_text(text)
        paths.append(str(f))
    r = subprocess.run([sys.executable, "-c", CHILD, *paths], capture_output=True, text=True, preexec_fn=limits)
    assert r.returncode == 0, f"the parsing child died (memory/CPU bound?): {r.returncode}\n{r.stderr[-3000:]}"
    results = json.loads(r.stdout)
    assert len(results) == len(paths)
    bad = [r for r in results if r[1] not in (0, 2) or r[3]]
    assert not bad, bad[:3]
    unlocated = [(p, errors) for p, code, errors, _ in results
                 if code == 2 and not any(e.startswith(f"{p}:") for e in errors)]  # FILE:LINE[:COL]: error:
    assert not unlocated, unlocated[:3]
