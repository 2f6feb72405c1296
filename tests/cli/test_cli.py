"""The command line as users and scripts see it: exit codes, located messages, outputs.

Runs `tefq` in-process through `run_command` (same code path as the console script) and, for the
console script itself, once as a subprocess.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tefq.cli import run_command
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
IPTV = "--prefix=:=http://example.org/iptv#"


def tefq(capsys, *argv: str) -> tuple[int, str, str]:
    code = run_command([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_console_script_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "tefq", "parse", str(SPEC10 / "uc1.tef")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "UserFact" in proc.stdout


def test_parse_prints_one_line_per_statement(capsys):
    code, out, err = tefq(capsys, "parse", SPEC10 / "uc2.tef")
    assert code == 0, err
    assert len(out.strip().splitlines()) == 2


def test_spec10_uc1_table_through_the_cli(capsys, tmp_path):
    metrics = tmp_path / "m.json"
    code, out, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv",
                          "--engine", "oracle", "--metrics", metrics)
    assert code == 0, err
    lines = [l.rstrip("\r") for l in out.strip().splitlines()]
    ns = "http://example.org/iptv#"
    assert lines == [
        "tick,CHANNEL,USER",
        f"5000,{ns}A,1", f"5000,{ns}B,1",
        f"10000,{ns}A,1", f"10000,{ns}B,2",
        f"15000,{ns}A,1", f"15000,{ns}B,3",
    ]
    m = json.loads(metrics.read_text())
    assert (m["facts_created"], m["facts_closed"], m["events_in"]) == (6, 2, 8)
    assert m["intermediate_bindings"] == 6


def test_spec10_uc2_averages(capsys):
    code, out, err = tefq(capsys, "run", SPEC10 / "uc2.tef", "--stream", SPEC10 / "events.tsv", "--engine", "oracle")
    assert code == 0, err
    rows = [l.rstrip("\r").split(",") for l in out.strip().splitlines()[1:]]
    got = {(int(r[0]), r[1].rsplit("#", 1)[1]): (r[2], float(r[3])) for r in rows}
    assert got == {
        (5000, "A"): ("1", 4.0), (5000, "B"): ("1", 2.0),
        (10000, "A"): ("1", 9.0), (10000, "B"): ("2", 2.5),
        (15000, "A"): ("1", 4.0), (15000, "B"): ("3", 6.0),
    }


# ---------------------------------------------------------------- bad input: exit 2, located message
def test_missing_query_file(capsys, tmp_path):
    code, _, err = tefq(capsys, "parse", tmp_path / "nope.tef")
    assert code == 2
    assert "nope.tef" in err and "Traceback" not in err


def test_missing_stream(capsys, tmp_path):
    code, _, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", tmp_path / "absent", "--engine", "oracle")
    assert code == 2
    assert "absent" in err and "Traceback" not in err


def test_run_without_arguments_names_both_missing_parts(capsys):
    code, out, err = tefq(capsys, "run")
    assert code == 2 and out == ""
    assert err.startswith("tefq run: error:") and "FILE.tef" in err and "--stream PATH" in err
    code, _, err = tefq(capsys, "run", SPEC10 / "uc1.tef")  # one part missing: that part named
    assert code == 2 and err.startswith("--stream: error:")


RUN_SPEC10 = ["run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--engine", "oracle"]


@pytest.mark.parametrize("argv, option", [([*RUN_SPEC10, "--at", "noon"], "--at"),
                                          ([*RUN_SPEC10, "--lateness", "-5"], "--lateness"),
                                          (["compare", "--usecase", "uc1", "--stream", SPEC10 / "events.tsv",
                                            "--windows", "10x"], "--windows")])
def test_an_option_is_named_once_in_its_message(capsys, argv, option: str):
    code, _, err = tefq(capsys, *argv)
    assert code == 2 and err.startswith(f"{option}: error:") and err.count(option) == 1, err


@pytest.mark.parametrize("master", ["bogus://x", "local[x]", "loca"])
def test_a_master_spark_cannot_parse_is_bad_input(capsys, monkeypatch, master: str):
    """Refused before a JVM starts (Spark's own refusal is a JVM's stack trace); from --master or
    from TEFQ_SPARK_MASTER, each named."""
    code, _, err = tefq(capsys, *RUN_SPEC10[:-1], "spark", "--master", master)
    assert code == 2 and err.startswith(f"--master: error: '{master}' is not a Spark master URL"), err
    monkeypatch.setenv("TEFQ_SPARK_MASTER", master)
    code, _, err = tefq(capsys, *RUN_SPEC10[:-1], "spark")
    assert code == 2 and err.startswith(f"TEFQ_SPARK_MASTER: error: '{master}'"), err


def test_the_master_urls_spark_takes_pass_and_only_embedded_ones_are_local():
    from tefq.spark.runtime.session_source import checked_master, is_local

    for master in ("local", "local[2]", "local[*]", "local[2,3]"):
        assert checked_master(master) == master and is_local(master)
    for master in ("local-cluster[2,1,1024]", "spark://host:7077", "yarn", "k8s://https://host:6443"):
        assert checked_master(master) == master and not is_local(master)
    assert not is_local("local[x]")  # no warm engine is started for it: it runs here, and is refused


@pytest.mark.parametrize("files", ["0", "-2"])
def test_max_files_per_trigger_below_one_is_refused(capsys, files: str):
    code, _, err = tefq(capsys, *RUN_SPEC10[:-1], "spark", "--max-files-per-trigger", files)
    assert code == 2 and err.startswith("--max-files-per-trigger: error: expects a count >= 1")


def test_bad_rows_naming_a_file_is_refused_before_the_run(capsys, tmp_path):
    (tmp_path / "afile").write_text("x\n")
    code, _, err = tefq(capsys, *RUN_SPEC10, "--bad-rows", tmp_path / "afile")
    assert code == 2 and "--bad-rows names a directory" in err and (tmp_path / "afile").read_text() == "x\n"


def test_unknown_option(capsys):
    code, _, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--frobnicate")
    assert code == 2
    assert "--frobnicate" in err


def test_bad_engine_choice(capsys):
    code, _, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", SPEC10 / "events.tsv", "--engine", "esper")
    assert code == 2
    assert "esper" in err


def test_syntax_error_is_located(capsys, tmp_path):
    q = tmp_path / "bad.tef"
    q.write_text("PREFIX : <http://example.org/iptv#>\nCONSTRUCT FACT F {?u :watching ?c .\n"
                 "(UNION (SINCE ?u :join ?c))\n")
    code, _, err = tefq(capsys, "parse", q)
    assert code == 2
    first = err.splitlines()[0]
    assert first.startswith(f"{q}:") and ": error: " in first
    assert "^" in err and "Traceback" not in err


def test_unknown_prefix_is_located(capsys, tmp_path):
    q = tmp_path / "prefix.tef"
    q.write_text("CONSTRUCT FACT F {?u ex:watching ?c .}\n(UNION (SINCE ?u ex:join ?c))\n")
    code, _, err = tefq(capsys, "parse", q)
    assert code == 2
    assert err.startswith(f"{q}:1:") and "ex" in err.splitlines()[0]


def test_unknown_prefix_can_be_mapped_on_the_command_line(capsys, tmp_path):
    q = tmp_path / "prefix.tef"
    q.write_text("CONSTRUCT FACT F {?u ex:watching ?c .}\n(UNION (SINCE ?u ex:join ?c))\n")
    code, _, err = tefq(capsys, "parse", q, "--prefix", "ex=http://example.org/")
    assert code == 0, err


def test_malformed_stream_row_names_file_and_line(capsys, tmp_path):
    s = tmp_path / "bad.tsv"
    s.write_text("ts\ts\tp\to\n1000\t<http://a>\t<http://b>\t<http://c>\nsoon\t<http://a>\t<http://b>\t<http://c>\n")
    code, _, err = tefq(capsys, "run", SPEC10 / "uc1.tef", "--stream", s, "--engine", "oracle")
    assert code == 2
    assert f"{s}:3" in err and "Traceback" not in err


def test_paper_queries_parse_with_the_empty_prefix_mapped(capsys, tmp_path):
    q = tmp_path / "paper.tef"
    q.write_text(
        'CONSTRUCT FACT UserFact {?user :watching ?channel .}\n'
        '(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))\n\n'
        'SELECT ?channel AS CHANNEL, ?user as USER (AGGREGATE ?channel, COUNT ?user WHERE '
        '(CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY "P10S"^^xsd:Duration)\n')
    code, _, err = tefq(capsys, "parse", q)
    assert code == 0 and "--prefix :=IRI" in err  # `:` is undeclared in the paper's text: a note (spec §9)
    code, out, err = tefq(capsys, "parse", q, IPTV)
    assert code == 0, err
    assert "P10S" in err or "PT10S" in err  # the paper's duration is read as 10 s, with a warning


@pytest.mark.parametrize("prefix", ["", "foo"])
def test_an_undeclared_prefix_reads_the_same_for_colon_and_foo_and_its_suggestion_runs(capsys, tmp_path, prefix):
    """`:` and `foo:` get one wording and one `--prefix` form, and the form suggested runs."""
    q = tmp_path / "q.tef"
    q.write_text(f"CONSTRUCT FACT F {{?u {prefix}:watching ?c .}}\n(UNION (SINCE ?u {prefix}:join ?c))\n"
                 f"SELECT ?c AS C, ?u AS U (AGGREGATE ?c, COUNT ?u WHERE (CURRENT ?u {prefix}:watching ?c) "
                 f"GROUP BY ?c EVERY 5s)\n")
    code, _, err = tefq(capsys, "run", q, "--stream", SPEC10 / "events.tsv", "--engine", "oracle")
    first = err.splitlines()[0]
    assert code == 2 and first.startswith(f"{q}:1:22: error: undeclared prefix '{prefix}:': "), err
    suggested = f"--prefix {prefix}:=IRI"
    assert first.endswith(f"declare it with PREFIX {prefix}: <IRI> or map it with {suggested}"), first
    code, out, err = tefq(capsys, "run", q, "--stream", SPEC10 / "events.tsv", "--engine", "oracle", "--quiet",
                          *suggested.replace("IRI", "http://example.org/iptv#").split(" "))
    assert code == 0 and out.count("\n") > 1, err
