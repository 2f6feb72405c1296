"""Packaging (issue 41): the metadata a package index shows (license, authors, keywords), and an
install without the `spark` extra: every command runs on the oracle, and asking for Spark is one
sentence naming `pip install 'tefq[spark]'` (exit 2), never a traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
WITHOUT_PYSPARK = """
import importlib.util
import sys

class NoPyspark:  # what an install without the `spark` extra looks like to Python
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

found = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] == "pyspark" else found(name, *a)
sys.meta_path.insert(0, NoPyspark())
from tefq.cli import run_command
sys.exit(run_command(sys.argv[1:]))
"""


def test_the_metadata_names_license_authors_and_the_spark_extra() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert project["authors"] and project["keywords"] and project["classifiers"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"])
    assert any(d.startswith("pyspark") for d in project["optional-dependencies"]["spark"])
    assert any(d.startswith("pyspark") for d in project["optional-dependencies"]["test"])  # make demo: one command


def without_pyspark(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_PYSPARK, *map(str, argv)], capture_output=True, text=True,
                          cwd=ROOT)


def test_without_pyspark_the_oracle_runs_and_spark_is_one_sentence() -> None:
    run = ["run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--quiet"]
    ok = without_pyspark(*run, "--engine", "oracle")
    assert ok.returncode == 0 and ok.stdout.count("\n") == 7, ok.stderr
    for argv in (run + ["--engine", "spark"],
                 ["facts", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--engine", "spark"]):
        proc = without_pyspark(*argv)
        assert proc.returncode == 2 and "pip install 'tefq[spark]'" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert without_pyspark("explain", SPEC10 / "uc1.tef", "--physical").returncode == 0  # plans need no JVM
