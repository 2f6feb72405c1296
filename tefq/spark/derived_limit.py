"""The single-pass numpy bar for a fact-aggregate plan (bench only): every event of an in-memory
(ts, s, p, o) Arrow table applied at once and every tick aggregated in one call of the same
kernels the Spark operator runs per micro-batch — no Spark, no state, no micro-batches."""
from __future__ import annotations

import numpy as np

from tefq.spark.protocol import SINCE
from tefq.spark.operators.fact import FactEvaluator, FactState
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.plan.ticks import tick_array, tick_at_or_after
from tefq.spark.kernels.intervals import Events


def single_pass(plan: FactAggregatePlan, table, t0: int = 0) -> tuple[dict[str, int], list]:
    """Evaluate `plan` over `table` (sorted by ts); returns the run's counts (rows_out,
    facts_created, ...) and its output records (`output.Collector` formats them) for the bench
    to check the engine's against."""
    import pandas as pd
    import pyarrow.compute as pc

    n = table.num_rows
    ts = table.column("ts").to_numpy()
    cols = {c: table.column(c) for c in ("s", "p", "o")}
    codes, uniques = pd.factorize(np.concatenate([cols["s"].to_numpy(zero_copy_only=False),
                                                  cols["o"].to_numpy(zero_copy_only=False)]))
    code = {"s": codes[:n].astype(np.int64), "o": codes[n:].astype(np.int64)}
    st = FactState(plan)
    order = np.arange(n, dtype=np.int64)
    for f in plan.event_facts:
        parts = []
        for c in f.clauses:
            m = np.ones(n, dtype=bool)
            for col, term in c.consts:
                m &= pc.equal(cols[col], term).to_numpy(zero_copy_only=False)
            for a, b in c.same:
                m &= code[a] == code[b]
            idx = np.nonzero(m)[0]
            ident = np.stack([code[col][idx] for col in c.binds], axis=1)
            fid = ident[:, 0] * 1_000_003 + (ident[:, 1] if ident.shape[1] > 1 else 0)
            parts.append(Events(np.full(len(idx), c.kind, np.int64), ts[idx], order[idx], fid, ident))
            if c.kind == SINCE:  # the output's terms, as the engine learns them from SINCE rows
                for q in f.terms:
                    st.terms.update((int(k), uniques[k]) for k in np.unique(ident[:, q]).tolist())
        st.pending[f.name] = [Events.concat(parts)]
    ticks = tick_array(tick_at_or_after(int(ts.min()), t0, plan.every_ms),
                       tick_at_or_after(int(ts.max()), t0, plan.every_ms), plan.every_ms)
    metrics = {"unmatched_until": 0, "facts_created": 0, "facts_closed": 0, "rows_out": 0}
    evaluator = FactEvaluator(plan)
    records = evaluator.advance(st, ticks, metrics)
    evaluator.finish(st, metrics)
    return metrics, records
