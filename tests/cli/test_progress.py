"""What a person sees while a run works (issue 41): a progress bar on a terminal for the steps that
take long (none in a pipe, none for a short step), lines in users' words, each step once, and a
`make demo` that ends in a small ranked table with no warning."""
from __future__ import annotations

import io
import re
import subprocess
import sys

from tefq import progress
from tefq.cli import run_command
from tefq.spark.runtime.progress import Progress
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only_after_a_while_and_erased(monkeypatch) -> None:
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    with progress.showing(True):
        with progress.bar("q1: ticks", 10) as b:
            b.advance(3)  # at once: not yet worth a bar
    assert err.getvalue() == ""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    with progress.showing(True):
        with progress.bar("q1: ticks", 10) as b:
            b.advance(5)
            assert "q1: ticks ▕" in err.getvalue() and "50%" in err.getvalue() and "(5 / 10)" in err.getvalue()
            b.say("a line that stays")
    assert err.getvalue().endswith("a line that stays\n\r\x1b[K")  # the bar erased at the end
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe: never a bar
    with progress.showing(True):
        assert not progress.active()


def test_an_oracle_run_shows_its_ticks_and_its_writing_on_a_terminal(monkeypatch, tmp_path) -> None:
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    code = run_command(["run", str(SPEC10 / "uc1.tef"), "--stream", str(SPEC10 / "events.tsv"), "--engine", "oracle",
                        "--out", str(tmp_path / "r.csv")])
    shown = err.getvalue()
    assert code == 0 and "q1: ticks ▕" in shown and "\r\x1b[K" in shown
    assert shown.rstrip().splitlines()[-1].split("\x1b[K")[-1].startswith("tefq: 8 events in, 6 rows out at 3 ticks")
    piped = subprocess.run([sys.executable, "-m", "tefq", "run", str(SPEC10 / "uc1.tef"), "--stream",
                            str(SPEC10 / "events.tsv"), "--engine", "oracle"], capture_output=True, text=True)
    assert "\r" not in piped.stderr and "▕" not in piped.stderr


def test_the_summary_speaks_plainly(capsys) -> None:
    run_command(["run", str(ROOT / "examples" / "rspql" / "genre-joins.rspql"), "--stream", str(SPEC10 / "events.tsv"),
                 "--stream", str(ROOT / "examples" / "rspql" / "epg.tsv"), "--engine", "oracle"])
    err = capsys.readouterr().err
    assert re.search(r"tefq: 12 events in, 4 rows out at 2 ticks; [0-9.]+ s on the oracle$", err.strip()), err
    assert "facts" not in err.strip().splitlines()[-1]  # RSP-QL defines none: no "facts created 0"


def test_a_micro_batch_line_in_users_words() -> None:
    p = Progress(False, "q1")
    line = p.line({"batchId": 0, "numInputRows": 1, "durationMs": {"triggerExecution": 1500}},
                  {"event_time": 1383559380000}, {"ticks": 1, "rows": 1, "partial": 4})
    assert line == "[spark q1] micro-batch 1: 1 event read (up to 2013-11-04T10:03:00.000Z), 1 tick, 1 row reported, 1.5 s"
    quiet = p.line({"batchId": 2, "numInputRows": 0, "durationMs": {}}, {}, {})
    assert quiet == "[spark q1] micro-batch 3: 0 events read, 0 ticks reported, 0.0 s"  # no "event time None"


def test_compare_prints_each_figure_once(tmp_path) -> None:
    data = tmp_path / "iptv"
    assert run_command(["gen", "iptv", "--out", str(data), "--events", "300", "--users", "60", "--channels", "4"]) == 0
    proc = subprocess.run([sys.executable, "-m", "tefq", "compare", "--usecase", "uc1", "--stream", str(data),
                           "--windows", "100s,200s"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.count("refresh-group") == 2, proc.stderr
    assert proc.stderr == ""  # piped: no step lines repeating the table


def test_the_demo_ends_in_a_ranked_table_without_warnings(tmp_path) -> None:
    """`make demo`'s steps at a tenth of its size, on the oracle (the demo itself runs Spark)."""
    data = tmp_path / "demo"
    gen = subprocess.run([sys.executable, "-m", "tefq", "gen", "iptv", "--out", str(data), "--events", "2000", "--users",
                          "460", "--channels", "40", "--seed", "7"], capture_output=True, text=True)
    assert gen.returncode == 0 and "warning" not in gen.stderr and "more than --days" not in gen.stderr
    out = tmp_path / "demo-uc1.parquet"
    run = subprocess.run([sys.executable, "-m", "tefq", "run", str(ROOT / "usecases" / "uc1.tef"), "--stream", str(data),
                          "--engine", "oracle", "--out", str(out), "--metrics", str(tmp_path / "m.json")],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr
    report = subprocess.run([sys.executable, str(ROOT / "examples" / "demo" / "top_channels.py"), str(out),
                             str(tmp_path / "m.json")], capture_output=True, text=True)
    assert report.returncode == 0 and report.stderr == "", report.stderr
    lines = report.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:3] == ["time", "(UTC)", "1st"])
    assert [line.split()[0] for line in lines[head + 1:head + 4]] == ["08:00", "13:00", "20:30"]
    assert re.match(r"ch\d+ \(\d+\)", lines[head + 1].split(None, 1)[1])
    assert any(line.startswith("Written: ") for line in lines) and any(line.startswith("Next: ") for line in lines)
    assert "{" not in report.stdout  # no JSON dump


def test_the_makefile_demo_is_the_tested_steps() -> None:
    """The Makefile's demo runs the steps above (gen, run to Parquet with metrics, the report)."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("demo: setup"):].split("\n\n", 1)[0]
    assert "gen iptv" in recipe and "--users 4600" in recipe and "tefq run usecases/uc1.tef" in recipe
    assert "top_channels.py" in recipe and "cat " not in recipe and "head " not in recipe
