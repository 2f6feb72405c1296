"""Issue 26: SUM of doubles near the largest double raised OverflowError out of `math.fsum` (exit 1
with "internal error"). A double SUM is the exact sum rounded once, and IEEE 754 (which XPath's
op:numeric-add follows for xs:double) rounds a sum beyond the largest double to +-INF: the cell is
"INF"^^xsd:double (docs/semantics.md, "Groups and aggregates")."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from decimal import Decimal

import pytest

from tefq.semantics.expressions import aggregate, arith, double_sum, exact_sum
from tefq.semantics.values import to_term

pytestmark = pytest.mark.reliability

TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
BIG = 1.7e308
XSD_DOUBLE = "http://www.w3.org/2001/XMLSchema#double"


@pytest.mark.parametrize("values,want", [
    ([BIG, BIG], math.inf),
    ([-BIG, -BIG], -math.inf),
    ([BIG, BIG, -BIG], BIG),  # the exact sum is back in range: no overflow at all
    ([BIG, BIG, -BIG, -BIG, 1.0], 1.0),
    ([math.inf, BIG, BIG], math.inf),
    ([1.0, 2.0, 0.1], math.fsum([1.0, 2.0, 0.1])),  # in range: fsum's correctly rounded sum, unchanged
])
def test_double_sums_round_once_and_overflow_to_infinity(values, want) -> None:
    assert double_sum(values) == want
    assert double_sum(list(reversed(values))) == want  # order independent, as every engine needs


@pytest.mark.parametrize("values", [[math.inf, -math.inf], [math.inf, -math.inf, BIG, BIG], [math.nan, BIG, BIG]])
def test_infinities_of_both_signs_or_a_nan_sum_to_nan(values) -> None:
    assert math.isnan(double_sum(values))


def test_integers_beyond_the_largest_double_promote_to_infinity() -> None:
    assert exact_sum([10 ** 400, 1.0]) == math.inf
    assert exact_sum([-(10 ** 400), 1.0]) == -math.inf
    assert exact_sum([10 ** 400, Decimal(1)]) == 10 ** 400 + 1  # no double: exact decimal
    assert arith("+", 10 ** 400, 1.0) == math.inf and arith("/", 10 ** 400, 2.0) == math.inf
    assert aggregate("AVG", [BIG, BIG], False) == math.inf


def test_sum_near_the_largest_double_on_the_command_line(tmp_path) -> None:
    query = tmp_path / "q.tef"
    query.write_text('PREFIX : <http://example.org/>\n'
                     'SELECT ?s AS S, ?a AS A (AGGREGATE SUM ?v AS ?s, AVG ?v AS ?a '
                     'WHERE (?x :val ?v) EVERY "PT10S"^^xsd:Duration)\n')
    stream = tmp_path / "e.tsv"
    stream.write_text("ts\ts\tp\to\n" + "".join(
        f'{t}\t<http://example.org/{x}>\t<http://example.org/val>\t"{v}"^^<{XSD_DOUBLE}>\n'
        for t, x, v in [(1000, "a", "1.7e308"), (2000, "b", "1.7e308"), (12000, "c", "-1.7e308")]))
    r = subprocess.run(TEFQ + ["run", str(query), "--engine", "oracle", "--stream", str(stream), "--quiet",
                               "--format", "tsv"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    inf, low = f'"INF"^^<{XSD_DOUBLE}>', to_term(-BIG)
    assert r.stdout.splitlines()[1:] == [f"10000\t{inf}\t{inf}", f"20000\t{low}\t{low}"]
