"""The windowed pipeline's rows the SQL projection could not vouch for (runtime/columns.vouched:
an IRI with `\\u` escapes, spaces around a cell, an `xsd:string` literal...), put in normal form
by the mapper before the shuffle. The projection decided their relevance (`p IN predicates`) and
join-key bucket on the raw cells; here, once the oracle's rules have found such a row good
(runtime/scan.settle_undecided), its cells become the oracle reader's terms
(tefq.io.validate.check_term), and its kind, bucket and element hash are decided again on them,
by the projection's own rules (runtime/columns.project_windowed). Such rows are rare: plain Python."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tefq.spark.planning.windowed import WindowedPlan
from tefq.spark.protocol import ELEMENT, RowKind
from tefq.spark.runtime.spark_hash import element_hash, string_bucket


def key_bucket(plan: WindowedPlan, s: str, p: str, o: str) -> int:
    """The join-key bucket of element (s, p, o), as project_windowed computes it in Spark SQL:
    the hash of its key term (the subject or the object, by its predicate); a literal: bucket 0."""
    if plan.key is None or plan.buckets <= 1:
        return 0
    term = s if p in plan.key.subject_predicates else o
    return string_bucket(term, plan.buckets) if term.startswith(("<", "_:")) else 0


class NormalCells:
    """`fix(rb, good)`: rows `good` (row index -> the oracle's normal s, p, o) of projected rows
    `rb` (protocol.ELEMENT_WIRE) rewritten as the projection writes a row in normal form."""

    def __init__(self, plan: WindowedPlan) -> None:
        self.plan = plan

    def relevant(self, p: str) -> bool:
        return self.plan.predicates is None or p in self.plan.predicates

    def fix(self, rb: pa.RecordBatch, good: dict[int, tuple[str, str, str]]) -> pa.RecordBatch:
        kinds = rb.column("k").to_numpy(zero_copy_only=False).copy()
        in_run = [i for i in sorted(good) if kinds[i] in (int(ELEMENT), int(RowKind.OTHER))]  # not before t0
        if not in_run:
            return rb
        elements = [i for i in in_run if self.relevant(good[i][1])]
        kinds[in_run] = int(RowKind.OTHER)
        kinds[elements] = int(ELEMENT)
        buckets = rb.column("b").to_numpy(zero_copy_only=False).copy()
        buckets[in_run] = 0  # as the projection's: an OTHER row's cells are null
        buckets[elements] = [key_bucket(self.plan, *good[i]) for i in elements]
        hashes = rb.column("f").to_numpy(zero_copy_only=False).copy()
        hashes[in_run] = [element_hash(*good[i]) for i in in_run]  # a repeat in normal form is the same element
        cols = {"k": pa.array(kinds, pa.int32()), "b": pa.array(buckets, pa.int32()), "f": pa.array(hashes, pa.int64())}
        mask = np.zeros(rb.num_rows, bool)
        mask[in_run] = True
        for j, name in enumerate(("s", "p", "obj")):
            cells = [good[i][j] if i in elements else None for i in in_run]
            cols[name] = pc.replace_with_mask(rb.column(name), pa.array(mask), pa.array(cells, pa.string()))
        return pa.RecordBatch.from_arrays([cols.get(n, rb.column(n)) for n in rb.schema.names], schema=rb.schema)
