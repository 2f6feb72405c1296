"""One rule for every command that writes a table (tefq.io.output_format): --out's extension names
the format (a --format that contradicts it is exit 2), a terminal gets a text table with ISO-8601
ticks and never binary bytes, --tick-format iso applies to --at too, CSV stays integer ms."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from tefq.cli import run_command
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
RUN = ["run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--engine", "oracle", "--quiet"]
FACTS = ["facts", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--engine", "oracle", "--quiet"]


def tefq(capsys, *argv) -> tuple[int, str, str]:
    code = run_command([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name, magic", [("r.parquet", b"PAR1"), ("r.arrow", b"ARROW1"), ("r.feather", b"ARROW1"),
                                         ("r.json", b'{"head"'), ("r.csv", b"tick,"), ("r.tsv", b"?tick"),
                                         ("r.txt", b"tick  "), ("r.xml", b"<?xml"), ("r.jsonl", b'{"tick"')])
def test_run_writes_the_format_its_out_extension_names(tmp_path, capsys, name: str, magic: bytes) -> None:
    code, _, err = tefq(capsys, *RUN, "--out", tmp_path / name)
    assert code == 0, err
    assert (tmp_path / name).read_bytes().startswith(magic)


def test_a_format_that_contradicts_the_extension_is_refused(tmp_path, capsys) -> None:
    code, _, err = tefq(capsys, *RUN, "--format", "csv", "--out", tmp_path / "r.parquet")
    assert code == 2 and "--format csv contradicts --out" in err and "parquet" in err
    assert not (tmp_path / "r.parquet").exists()
    code, _, err = tefq(capsys, *RUN, "--format", "parquet", "--out", tmp_path / "r.parquet")
    assert code == 0, err  # saying it twice is fine
    code, _, err = tefq(capsys, *RUN, "--format", "tsv", "--out", tmp_path / "r.dat")  # no known extension
    assert code == 0 and (tmp_path / "r.dat").read_text().startswith("?tick")


@pytest.mark.parametrize("name, meant", [("r.parqet", ".parquet"), ("r.cvs", ".csv"), ("r.jsn", ".json"),
                                         ("r.fether", ".feather")])
def test_a_misspelt_extension_is_refused_not_written_as_csv(tmp_path, capsys, name: str, meant: str) -> None:
    code, _, err = tefq(capsys, *RUN, "--out", tmp_path / name)
    assert code == 2 and f"did you mean '{meant}'" in err and err.startswith("--out: error:")
    assert not (tmp_path / name).exists()
    # the format said: written as asked
    code, _, err = tefq(capsys, *RUN, "--format", "csv", "--out", tmp_path / name)
    assert code == 0, err
    assert (tmp_path / name).read_bytes().startswith(b"tick,")


def test_facts_and_usecase_follow_the_extension_too(tmp_path, capsys) -> None:
    code, _, err = tefq(capsys, *FACTS, "--out", tmp_path / "f.json")
    assert code == 2 and "tefq facts does not write" in err
    code, _, err = tefq(capsys, *FACTS, "--out", tmp_path / "f.txt")
    assert code == 0, err
    text = (tmp_path / "f.txt").read_text().splitlines()
    assert text[0].split() == ["fact", "user", "channel", "start", "end"]
    assert "1970-01-01T00:00:01.000Z" in text[2]  # a table for people: ISO times
    code, _, err = tefq(capsys, *FACTS, "--format", "tsv", "--out", tmp_path / "f.parquet")
    assert code == 2 and "contradicts" in err
    data = tmp_path / "iptv"
    assert tefq(capsys, "gen", "iptv", "--out", data, "--events", "300", "--users", "30", "--channels", "5", "--epg")[0] == 0
    code, _, err = tefq(capsys, "usecase", "uc1", "--data", data, "--engine", "oracle", "--quiet",
                        "--out", tmp_path / "u.parquet")
    assert code == 0 and (tmp_path / "u.parquet").read_bytes()[:4] == b"PAR1", err


def test_as_of_takes_the_output_options(tmp_path, capsys) -> None:
    at = ["--at", "1970-01-01T00:00:10Z"]
    code, out, err = tefq(capsys, *RUN, *at, "--tick-format", "iso")
    assert code == 0 and out.splitlines()[1].startswith("1970-01-01T00:00:10.000Z,"), err
    code, out, err = tefq(capsys, *RUN, *at)
    assert code == 0 and out.splitlines()[1].startswith("10000,")  # CSV: integer ms unless asked
    code, _, err = tefq(capsys, *RUN, *at, "--out", tmp_path / "a.json")
    assert code == 0 and json.loads((tmp_path / "a.json").read_text())["head"]["vars"][0] == "tick"
    import pyarrow.parquet as pq

    code, _, err = tefq(capsys, *RUN, *at, "--out", tmp_path / "a.parquet")
    assert code == 0 and pq.read_table(tmp_path / "a.parquet").column("USER").to_pylist() == [1, 2]  # typed


def on_a_terminal(*argv) -> tuple[int, str]:
    """`tefq ARGV` with its standard output on a pseudo-terminal: (exit code, what it showed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tefq", *map(str, argv)], stdout=follower,
                            stderr=subprocess.PIPE, env=dict(os.environ, COLUMNS="200"))
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), shown.decode(errors="replace") + err


def test_a_terminal_gets_a_table_with_iso_ticks_and_never_binary_bytes() -> None:
    code, shown = on_a_terminal(*RUN)
    assert code == 0 and "1970-01-01T00:00:05.000Z" in shown and "(6 rows)" in shown, shown
    code, shown = on_a_terminal(*RUN, "--format", "parquet")
    assert code == 2 and "parquet is a binary format" in shown and "PAR1" not in shown
    code, shown = on_a_terminal(*FACTS)
    assert code == 0 and "1970-01-01T00:00:01.000Z" in shown, shown


def test_a_pipe_gets_csv_with_integer_ticks() -> None:
    proc = subprocess.run([sys.executable, "-m", "tefq", *map(str, RUN)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines()[1].startswith("5000,")
