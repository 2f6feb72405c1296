"""The facts timeline (`tefq facts --plot`, issue 41): --limit N identities (a screen's worth by
default), the time in readable units on a top and a bottom axis, --where with the document's
prefixed names."""
from __future__ import annotations

import os

import pytest

from tefq.cli import run_command
from tefq.errors import TefqError
from tefq.facts.plot import SCREEN_ROWS, parse_where, time_format
from tests.support.paths import ROOT

SPEC10 = os.path.join(ROOT, "examples", "spec10")
IPTV = "http://example.org/iptv#"


def test_where_takes_the_documents_prefixed_names() -> None:
    prefixes = {"": IPTV, "xsd": "http://www.w3.org/2001/XMLSchema#"}
    assert parse_where(["channel=:ch42"], prefixes) == [("channel", f"<{IPTV}ch42>")]
    assert parse_where(["?channel=<http://x/a>", "n=http://x/b"], prefixes) == [("channel", "<http://x/a>"),
                                                                                 ("n", "<http://x/b>")]
    with pytest.raises(TefqError, match="the prefix 'foo:' is not the document's"):
        parse_where(["channel=foo:ch42"], prefixes)


def test_the_time_axis_speaks_in_the_units_of_the_span() -> None:
    assert time_format(1000, 15000) == ("%H:%M:%S", "time (UTC) on 1970-01-01, hh:mm:ss")
    day = 1_383_523_200_000  # 2013-11-04
    assert time_format(day, day + 3_600_000 * 5) == ("%H:%M", "time (UTC) on 2013-11-04, hh:mm")
    assert time_format(day, day + 86_400_000 * 2)[1] == "time (UTC)"
    assert time_format(day, day + 86_400_000 * 30) == ("%Y-%m-%d", "date (UTC)")


def identities(capsys, *argv) -> tuple[int, str]:
    code = run_command(["facts", os.path.join(ROOT, "usecases", "uc1.tef"), "--engine", "oracle", *argv])
    return code, capsys.readouterr().err


def test_limit_where_and_both_axes(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.image

    data = tmp_path / "iptv"
    assert run_command(["gen", "iptv", "--out", str(data), "--events", "3000", "--users", "700", "--channels", "6"]) == 0
    png = tmp_path / "t.png"
    code, err = identities(capsys, "--stream", str(data), "--plot", str(png), "--out", str(tmp_path / "f.csv"))
    assert code == 0 and f"timeline of {SCREEN_ROWS} identities" in err, err
    height = matplotlib.image.imread(png).shape[0]
    code, err = identities(capsys, "--stream", str(data), "--plot", str(png), "--out", str(tmp_path / "f.csv"),
                           "--limit", "5", "--where", "channel=:ch1")
    assert code == 0 and "timeline of 5 identities" in err, err
    assert matplotlib.image.imread(png).shape[0] < height / 3  # five rows: a short picture
    rows = (tmp_path / "f.csv").read_text().splitlines()[1:]
    assert rows and all(f",{IPTV}ch1," in r for r in rows)
    code, err = identities(capsys, "--stream", str(data), "--plot", str(png), "--limit", "0")
    assert code == 2 and "--limit takes 1 to 400" in err


def test_the_axis_is_on_top_and_bottom() -> None:
    pytest.importorskip("matplotlib")
    import tefq
    from tefq.facts.plot import timeline_figure
    from tefq.facts.table import fact_table
    from tefq.io.readers import read_stream

    doc = tefq.load(os.path.join(SPEC10, "uc1.tef")).document()
    fig, shown = timeline_figure(fact_table(doc, read_stream(os.path.join(SPEC10, "events.tsv"))), "uc1.tef")
    ax = fig.axes[0]
    fig.canvas.draw()
    params = ax.xaxis.get_tick_params(which="major")
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert shown == 6 and params.get("labeltop") and params.get("top")
    assert "00:00:05" in labels and "hh:mm:ss" in ax.get_xlabel()  # seconds of 1970-01-01, said so


@pytest.mark.parametrize("plot, limit, says", [("t.txt", "10", "the picture's extension names its format"),
                                               ("t.png", "0", "--limit takes 1 to 400"),
                                               ("missing/t.png", "10", "cannot write --plot here")])
def test_a_picture_it_cannot_write_is_refused_before_the_table(tmp_path, capsys, plot: str, limit: str,
                                                                says: str) -> None:
    """Checked before the run: no table written, then a failure (it was an internal error for
    an extension matplotlib does not write, after the table was out)."""
    pytest.importorskip("matplotlib")
    code = run_command(["facts", os.path.join(ROOT, "usecases", "uc1.tef"), "--engine", "oracle",
                        "--stream", os.path.join(SPEC10, "events.tsv"), "--plot", str(tmp_path / plot),
                        "--limit", limit, "--out", str(tmp_path / "f.csv")])
    assert code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "f.csv").exists()
