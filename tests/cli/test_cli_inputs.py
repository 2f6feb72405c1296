"""`tefq run` inputs and option hygiene (issue 15): `--stream -`, `--stream-format`, options the
chosen engine would ignore, every option's default in its help, the use-cases shipped as package
data."""
from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tefq.cli import build_parser, run_command
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
STREAMS = ROOT / "tests" / "data" / "streams"
UC1 = ROOT / "tests" / "data" / "queries" / "uc1.tef"


def tefq(capsys, *argv) -> tuple[int, str, str]:
    code = run_command([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def with_stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def from_file(capsys, stream, *extra, query=SPEC10 / "uc1.tef") -> str:
    code, out, err = tefq(capsys, "run", query, "--stream", stream, "--engine", "oracle", "--quiet", *extra)
    assert code == 0, err
    return out


def test_stdin_is_read_as_tsv_by_default(capsys, monkeypatch):
    expected = from_file(capsys, SPEC10 / "events.tsv")
    with_stdin(monkeypatch, (SPEC10 / "events.tsv").read_bytes())
    assert from_file(capsys, "-") == expected and expected.count("\n") == 7


@pytest.mark.parametrize("fmt", ["nq", "trig", "csv", "stream"])
def test_stdin_and_renamed_files_with_stream_format(capsys, monkeypatch, tmp_path, fmt):
    expected = from_file(capsys, STREAMS / "basic.tsv")
    assert expected.count("\n") >= 2
    with_stdin(monkeypatch, (STREAMS / f"basic.{fmt}").read_bytes())
    assert from_file(capsys, "-", "--stream-format", fmt) == expected
    renamed = tmp_path / "dir" / "events.txt"
    renamed.parent.mkdir()
    shutil.copy(STREAMS / f"basic.{fmt}", renamed)
    assert from_file(capsys, renamed, "--stream-format", fmt) == expected
    assert from_file(capsys, renamed.parent, "--stream-format", fmt) == expected  # a directory


def test_errors_name_stdin_and_the_original_file(capsys, monkeypatch, tmp_path):
    bad = "ts\ts\tp\to\n1000\thttp://bare\t<http://e/p>\t<http://e/o>\n".encode()
    with_stdin(monkeypatch, bad)
    code, _, err = tefq(capsys, "run", UC1, "--stream", "-", "--engine", "oracle")
    assert code == 2 and err.startswith("<stdin>:2:6: error:"), err
    renamed = tmp_path / "log.txt"
    renamed.write_bytes(bad)
    code, _, err = tefq(capsys, "run", UC1, "--stream", renamed, "--stream-format", "tsv", "--engine", "oracle")
    assert code == 2 and err.startswith(f"{renamed}:2:6: error:"), err
    code, _, err = tefq(capsys, "run", UC1, "--stream", renamed, "--stream-format", "xlsx", "--engine", "oracle")
    assert code == 2 and "invalid choice: 'xlsx'" in err
    code, _, err = tefq(capsys, "run", UC1, "--stream", "-", "--stream", "-", "--engine", "oracle")
    assert code == 2 and "standard input can be given once" in err


@pytest.mark.parametrize("option", [["--checkpoint", "cp"], ["--master", "local[1]"],
                                    ["--max-files-per-trigger", "3"]])
def test_spark_only_options_are_refused_with_the_oracle(capsys, option):
    code, out, err = tefq(capsys, "run", UC1, "--stream", STREAMS / "basic.tsv", "--engine", "oracle", *option)
    assert code == 2 and out == ""
    assert err.startswith(f"{option[0]}: error: {option[0]} applies to the Spark engine only"), err


def test_follow_needs_an_appendable_format(capsys, tmp_path):
    code, _, err = tefq(capsys, "run", UC1, "--stream", tmp_path, "--follow", "--format", "json")
    assert code == 2 and "--follow appends rows as they come: use --format csv, tsv, jsonl" in err
    code, _, err = tefq(capsys, "run", UC1, "--stream", "-", "--follow")
    assert code == 2 and "--stream - and --stream-format are for bounded runs" in err


def test_following_a_file_says_nothing_new_will_come_from_it(capsys, tmp_path):
    """A followed file is read once (a file that grows stops the run): the user hears so at once,
    instead of a run that waits for nothing. A directory is what a live run follows."""
    pytest.importorskip("pyspark")
    from tefq.analysis import load
    from tefq.spark.engine import check_run

    doc = load(str(UC1))
    check_run(doc, [str(STREAMS / "basic.tsv"), str(tmp_path)], follow=True, ingest="auto")
    err = capsys.readouterr().err
    assert err.startswith(f"{STREAMS / 'basic.tsv'}: warning: --follow watches for new files"), err
    assert str(tmp_path) not in err  # a directory is followed without a word
    check_run(doc, [str(STREAMS / "basic.tsv")], follow=False, ingest="auto")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("inputs", [["--stream", "-"], ["--stream", str(STREAMS / "basic.tsv"), "--stream-format", "tsv"]])
def test_a_checkpoint_refuses_inputs_staged_afresh_by_each_run(capsys, tmp_path, inputs):
    code, _, err = tefq(capsys, "run", UC1, *inputs, "--engine", "spark", "--checkpoint", tmp_path / "ck")
    assert code == 2 and "--checkpoint resumes over the same stream files" in err
    assert not (tmp_path / "ck").exists()


def _parsers(parser: argparse.ArgumentParser, path: str = "tefq"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_option_shows_its_default():
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if (not action.option_strings or action.required or action.default is argparse.SUPPRESS
                    or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
                continue
            formatter = parser._get_formatter()
            if "default" not in formatter._expand_help(action).lower():
                missing.append(f"{path} {action.option_strings[0]}")
    assert missing == []


def test_usecases_ship_inside_the_wheel_and_resolve_from_it(tmp_path):
    """Build the wheel (as `pip install .` does), unpack it away from the source tree and look the
    use-cases up from another working directory."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                            str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("tefq-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    assert (site / "tefq" / "usecases" / "uc3.tef").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = subprocess.run([sys.executable, "-c", "from tefq.iptv.cli import usecase_file\n"
                            "for n in ('uc1', 'uc2', 'uc3'): print(usecase_file(n))"],
                           capture_output=True, text=True, cwd=elsewhere,
                           env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert probe.returncode == 0, probe.stderr
    paths = [Path(p) for p in probe.stdout.split()]
    assert len(paths) == 3 and all(p.is_relative_to(site) and p.is_file() for p in paths)


@pytest.mark.spark
def test_spark_reads_stdin_with_a_format_as_the_oracle(capsys, monkeypatch):
    expected = from_file(capsys, STREAMS / "basic.tsv", query=UC1)
    assert expected.count("\n") == 2
    with_stdin(monkeypatch, (STREAMS / "basic.nq").read_bytes())
    code, out, err = tefq(capsys, "run", UC1, "--stream", "-", "--stream-format", "nq", "--quiet",
                          "--master", "local[2]")
    assert code == 0, err
    assert out == expected


def test_default_format_is_text_on_a_terminal_and_csv_otherwise(capsys, monkeypatch):
    assert from_file(capsys, SPEC10 / "events.tsv").startswith("tick,CHANNEL,USER\r\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    out = from_file(capsys, SPEC10 / "events.tsv")
    assert out.splitlines()[0].split() == ["tick", "CHANNEL", "USER"] and out.endswith("(6 rows)\n")
