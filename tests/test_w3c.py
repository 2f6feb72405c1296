"""The W3C SPARQL 1.1 query-evaluation tests that fit one stream (../shared/external/w3c-sparql,
459 tests), run as a user would with `tefq run`: one document per engine, every test a
`REGISTER QUERY` over its own stream bound by `--stream IRI=PATH` (bench/w3c.py builds and runs it
and prints the per-category table). Spec §8: a window's answer is a conforming SPARQL 1.1
engine's over the window's content.

Each engine must pass every test but those of `EXPECTED_FAILURES` (strict: a test that starts
passing must leave the list), and Spark's answer to every test must be the oracle's, with its
default small-window path (rdflib on windows of under 1,000 triples) and with every window
vectorised (`TEFQ_SMALL_WINDOW=0`).
"""
from __future__ import annotations

import pytest

from bench import w3c

pytestmark = pytest.mark.needs_shared("external/w3c-sparql")

# Where an answer departs from the W3C's, on both engines (they share rdflib's expression code),
# and why: none left (bnode01 was the last; docs/windowed-oracle.md has the table of corrections).
EXPECTED_FAILURES: dict[str, str] = {}
AT_LEAST = 440  # the bar: more than pyoxigraph's 434 of 459


@pytest.fixture(scope="module")
def suite() -> list[w3c.Test]:
    return w3c.load()


def failures(outcomes: dict[str, w3c.Outcome]) -> dict[str, str]:
    return {k: f"{o.verdict}: {o.detail}" for k, o in outcomes.items() if o.verdict != "passed"}


def check(outcomes: dict[str, w3c.Outcome], suite: list[w3c.Test]) -> None:
    failed = failures(outcomes)
    unexpected = {k: v for k, v in failed.items() if k not in EXPECTED_FAILURES}
    now_passing = sorted(set(EXPECTED_FAILURES) - set(failed))
    assert not unexpected and not now_passing, (
        f"{w3c.table(outcomes, suite)}\nunexpected failures: {unexpected}\n"
        f"passing now, take them off EXPECTED_FAILURES: {now_passing}")
    assert len(suite) - len(failed) >= AT_LEAST


@pytest.fixture(scope="module")
def oracle(suite, tmp_path_factory) -> dict[str, w3c.Outcome]:
    return w3c.run_engine("oracle", suite, tmp_path_factory.mktemp("w3c-oracle"))


def test_the_oracle_answers_as_the_w3c(oracle, suite) -> None:
    check(oracle, suite)


@pytest.mark.spark
@pytest.mark.timeout(1800)  # one Spark run of 459 queries over 459 streams: minutes on a loaded machine
@pytest.mark.parametrize("small_window", [None, "0"], ids=["default", "every-window-vectorised"])
def test_spark_answers_every_test_as_the_oracle(small_window, oracle, suite, spark, tmp_path_factory,
                                                monkeypatch) -> None:
    if small_window is not None:
        monkeypatch.setenv("TEFQ_SMALL_WINDOW", small_window)
    got = w3c.run_engine("spark", suite, tmp_path_factory.mktemp("w3c-spark"), spark=spark)
    check(got, suite)
    differ = [t.id for t in suite if not w3c.same_answer(oracle[t.id], got[t.id], t)]
    assert not differ, f"Spark's answer differs from the oracle's: {differ}"
