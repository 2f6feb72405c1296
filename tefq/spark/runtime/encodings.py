"""Each plan's wire rows (`tefq.spark.protocol`), made from either input a mapper reads:

- `projected`: rows of Spark's projection (runtime/columns.py, runtime/fact_rows.py), whose clauses
  Spark SQL already matched and hashed (xxhash64); the encoding keeps the rows the operator needs;
- `from_file`: rows a task read from a Parquet file with pyarrow (runtime/columnar.py), matched and
  coded here in numpy (SipHash term codes combined by splitmix64), the same rows for the operator.

One encoder per input partition (it may collect TERMS rows on the way: `trailer`). The mapper
around it is written once (runtime/mappers.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa

from tefq.spark.kernels.general.coding import ChainedTerms, Elements, TermDictionary, code_columns
from tefq.spark.kernels.general.coding import row_hash
from tefq.spark.kernels.general.local import coded_background
from tefq.spark.kernels.general.routing import element_buckets
from tefq.spark.protocol import (ELEMENT, ELEMENT_WIRE, SINCE, TERMS, RowKind, FileTieOrder, are_events, control_rows,
                                 current_wire, fact_wire)
from tefq.spark.runtime.columnar import FileBatch, combine

if TYPE_CHECKING:  # the workers import no planner (docs/spark.md "Start-up")
    from tefq.spark.planning.current import CurrentAggregatePlan
    from tefq.spark.planning.fact import FactAggregatePlan
    from tefq.spark.planning.general import GeneralPlan


class Encoding:
    """The encoder of one plan's rows for one input partition. `only`: bucket `only`'s rows alone
    (direct ingestion: each bucket's operator encodes every file for itself)."""

    def __init__(self, plan, only: int | None = None) -> None:
        self.plan, self.only = plan, only
        self.schema = self.wire(plan)

    @staticmethod
    def wire(plan) -> pa.Schema:
        raise NotImplementedError

    def first(self, rb: pa.RecordBatch) -> np.ndarray | None:
        """Per projected row, whether it is its element's first (None: each row is one element)."""
        return None

    def with_order(self, rb: pa.RecordBatch, order: pa.Array, blank: frozenset[str] = frozenset()) -> pa.RecordBatch:
        """The projected rows in the wire schema, `o` (the file's hash) replaced by the tie order,
        the `blank` columns by nulls."""
        cols = {"o": order} | {name: pa.nulls(rb.num_rows, pa.string()) for name in blank}
        return pa.RecordBatch.from_arrays([cols[name] if name in cols else rb.column(name)
                                           for name in self.schema.names], schema=self.schema)

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        """The rows the operator needs of projected rows `rb` (`kinds`: their column k)."""
        raise NotImplementedError

    def from_file(self, fb: FileBatch, order: FileTieOrder) -> pa.RecordBatch | None:
        raise NotImplementedError(f"{type(self.plan).__name__} has no columnar path (its shape's capabilities)")

    def trailer(self) -> list[pa.RecordBatch]:
        """Rows sent after the partition's rows, before its heartbeats (TERMS rows)."""
        return []


class TermRows:
    """The group terms a mapper has seen on SINCE rows, sent once per (bucket, code) on TERMS rows."""

    def __init__(self, ngroups: int) -> None:
        self.ngroups = ngroups
        self.named: list[set] = [set() for _ in range(ngroups)]  # (bucket, code) pairs already sent
        self.rows: list[tuple[int, int, int, str]] = []  # (group var, bucket, code, term)

    def see(self, rb: pa.RecordBatch, opens: np.ndarray) -> None:
        """`opens`: the SINCE rows of `rb` (the rows that carry terms)."""
        if not self.ngroups or not len(opens):
            return
        buckets = rb.column("b").to_numpy(zero_copy_only=False)[opens]
        for i in range(self.ngroups):
            codes = rb.column(f"g{i}").to_numpy(zero_copy_only=False)[opens]
            for b in np.unique(buckets).tolist():
                sel = np.nonzero(buckets == b)[0]
                uniq, first = np.unique(codes[sel], return_index=True)
                new = [(c, j) for c, j in zip(uniq.tolist(), first.tolist()) if (b, c) not in self.named[i]]
                if new:
                    terms = rb.column(f"t{i}").take(pa.array(opens[sel[[j for _, j in new]]])).to_pylist()
                    for (c, _), term in zip(new, terms):
                        self.named[i].add((b, c))
                        self.rows.append((i, b, c, term))

    def batch(self, schema: pa.Schema) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        cols = {"b": [b for _, b, _, _ in self.rows]}
        for i in range(self.ngroups):
            cols[f"g{i}"] = [c if j == i else 0 for j, _, c, _ in self.rows]
            cols[f"t{i}"] = [term if j == i else None for j, _, _, term in self.rows]
        return control_rows(schema, TERMS, len(self.rows), **cols)


class CurrentRows(Encoding):
    """CURRENT aggregates: the SINCE/UNTIL rows with their bucket (the group key's hash) and group
    codes; each distinct `code -> term` pair travels once per partition and bucket, on a TERMS row."""

    def __init__(self, plan: CurrentAggregatePlan, only: int | None = None) -> None:
        super().__init__(plan, only)
        self.ngroups = len(plan.group_vars)
        self.terms = TermRows(self.ngroups)
        self.var_pos = {v: i for i, v in enumerate(plan.identity)}
        self.term_columns = frozenset(f"t{i}" for i in range(self.ngroups))

    @staticmethod
    def wire(plan: CurrentAggregatePlan) -> pa.Schema:
        return current_wire(len(plan.group_vars))

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        keep = np.flatnonzero(are_events(kinds) | (kinds == int(RowKind.OTHER)))  # OTHER: for its duplicates
        self.terms.see(rb, keep[kinds[keep] == int(SINCE)])  # SINCE rows carry terms
        if not len(keep):
            return None
        out = self.with_order(rb, order, self.term_columns)  # the terms travel on TERMS rows
        return out.take(pa.array(keep)) if len(keep) < rb.num_rows else out

    def trailer(self) -> list[pa.RecordBatch]:
        named = self.terms.batch(self.schema)
        return [] if named is None else [named]

    def per_clause(self, keep: np.ndarray, mk: np.ndarray, columns: Callable, make: Callable) -> np.ndarray:
        """`make(column names, rows)` for each kept row (`mk`: its clause), with the columns its
        clause gives: clauses that read the same columns are computed together (UC1, UC2: one pass)."""
        groups: dict[tuple, list[int]] = {}
        for i, c in enumerate(self.plan.clauses):
            groups.setdefault(tuple(columns(c)), []).append(i)
        if len(groups) == 1:
            return make(next(iter(groups)), keep)
        out = np.zeros(len(keep), np.int64)
        for names, idx in groups.items():
            sel = np.isin(mk, idx)
            if sel.any():
                out[sel] = make(names, keep[sel])
        return out

    def group_var(self, i: int) -> Callable:
        return lambda c, j=self.var_pos[self.plan.group_vars[i]]: (c.binds[j],)

    def group_codes(self, fb: FileBatch, keep: np.ndarray, mk: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Per kept row: the group terms' codes and the bucket (their combined hash mod buckets)."""
        gcodes = [self.per_clause(keep, mk, self.group_var(i), lambda names, rows: fb.cols[names[0]].codes[rows])
                  for i in range(self.ngroups)]
        if not self.ngroups:
            return gcodes, np.zeros(len(keep), np.int32)
        return gcodes, (combine(gcodes, len(keep)).view(np.uint64) % np.uint64(self.plan.buckets)).astype(np.int32)

    def from_file(self, fb: FileBatch, order: FileTieOrder) -> pa.RecordBatch | None:
        plan, cols = self.plan, fb.cols
        m = np.full(fb.n, -1, np.int64)  # the first clause a row matches, as the projection's when-chain
        for i in reversed(range(len(plan.clauses))):
            m[fb.matches(plan.clauses[i])] = i
        keep = np.flatnonzero(fb.good)  # rows no clause matches too (OTHER): for their duplicates
        whole = combine([cols[x].codes[keep] for x in "spo"], len(keep))
        gcodes, bucket = self.group_codes(fb, keep, m[keep])
        other = m[keep] < 0
        bucket[other] = (whole[other].view(np.uint64) % np.uint64(plan.buckets)).astype(np.int32)
        if self.only is not None:  # the other buckets' rows are their operators' to encode
            mine = bucket == self.only
            keep, bucket, gcodes, whole = keep[mine], bucket[mine], [g[mine] for g in gcodes], whole[mine]
        keys = order.keys(fb.first, fb.row0 == 0, keep, fb.n)
        if not len(keep):
            return None
        mk = m[keep]
        kinds = np.append(np.array([c.kind for c in plan.clauses], np.int32), np.int32(RowKind.OTHER))[mk]
        fid = self.per_clause(keep, mk, lambda c: c.binds,
                              lambda names, rows: combine([cols[x].codes[rows] for x in names], len(rows)))
        fid[mk < 0] = 0
        elem = np.where(mk >= 0, fid, whole) if plan.identity_is_element else whole
        arrays = {"k": pa.array(kinds), "ts": pa.array(fb.ts[keep]), "o": pa.array(keys), "f": pa.array(fid),
                  "e": pa.array(elem), "n": pa.array(np.zeros(len(keep), np.int64)), "b": pa.array(bucket)}
        for i in range(self.ngroups):
            arrays[f"g{i}"] = pa.array(gcodes[i])
            arrays[f"t{i}"] = pa.nulls(len(keep), pa.string())
        out = pa.RecordBatch.from_arrays([arrays[f] for f in self.schema.names], schema=self.schema)
        self.see_file_terms(fb, out, keep, mk, np.flatnonzero(kinds == SINCE))
        return out

    def see_file_terms(self, fb: FileBatch, out: pa.RecordBatch, keep: np.ndarray, mk: np.ndarray,
                       opens: np.ndarray) -> None:
        """The group terms of the SINCE rows `opens` of `out`, read from the file's dictionaries."""
        if not self.ngroups or not len(opens):
            return
        everything, base = fb.dictionaries()
        named = {"b": out.column("b")}
        for i in range(self.ngroups):
            # the group term per kept row, as an index into `everything`
            at = self.per_clause(keep, mk, self.group_var(i),
                                 lambda names, rows: fb.cols[names[0]].idx[rows] + base[names[0]])
            named[f"g{i}"] = out.column(f"g{i}")
            named[f"t{i}"] = pa.DictionaryArray.from_arrays(pa.array(at.astype(np.int32)), everything)
        self.terms.see(pa.RecordBatch.from_pydict(named), opens)


class FactRows(Encoding):
    """Fact aggregates: one row per (event fact, clause) an element matches, UNTIL clauses first;
    `n` 1 on the element's first row; output terms inline on SINCE rows. Every row starts in bucket
    0: the routing (runtime/fact_buckets.py) sends it on."""

    def __init__(self, plan: FactAggregatePlan, only: int | None = None) -> None:
        super().__init__(plan, only)
        self.arity, self.nterms = plan.widths
        self.matches = [(i, f, c) for i, f in enumerate(plan.event_facts) for c in f.clauses]

    @staticmethod
    def wire(plan: FactAggregatePlan) -> pa.Schema:
        return fact_wire(*plan.widths)

    def first(self, rb: pa.RecordBatch) -> np.ndarray:
        return rb.column("n").to_numpy(zero_copy_only=False) == 1  # an element's first row: counted once

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        keep = are_events(kinds) | (kinds == int(RowKind.OTHER))  # OTHER: for its duplicates
        out = self.with_order(rb, order).filter(pa.array(keep))
        return out if out.num_rows else None

    def exploded(self, fb: FileBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """Every (row, match) pair in row order, then match order (the projection's exploded rows;
        a good row no clause matches once, as match len(self.matches)):
        rows, which match, whether it is the row's first, its position among the projection's rows
        (max(1, matches) per element, bad rows included: the tie order counts them) and their number."""
        hits = [np.flatnonzero(fb.matches(c)) for _, _, c in self.matches]
        matched = np.zeros(fb.n, bool)
        for h in hits:
            matched[h] = True
        hits.append(np.flatnonzero(fb.good & ~matched))  # match len(self.matches): none (an OTHER row)
        rows = np.concatenate(hits + [np.zeros(0, np.int64)]).astype(np.int64)
        which = np.concatenate([np.full(len(h), j, np.int64) for j, h in enumerate(hits)] + [np.zeros(0, np.int64)])
        sort = np.lexsort((which, rows))
        rows, which = rows[sort], which[sort]
        per_row = np.maximum(np.bincount(rows, minlength=fb.n), 1)
        before = np.cumsum(per_row) - per_row
        first = np.ones(len(rows), bool)
        first[1:] = rows[1:] != rows[:-1]
        run_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0)) if len(rows) else rows
        return rows, which, first, before[rows] + (np.arange(len(rows)) - run_start), int(per_row.sum())

    def matched_columns(self, fb: FileBatch, rows: np.ndarray, which: np.ndarray) -> dict[str, pa.Array]:
        """The kind, fact, identity and output-term columns of the exploded rows."""
        cols, n = fb.cols, len(rows)
        k, fact, fid = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int64)
        v = [np.zeros(n, np.int64) for _ in range(self.arity)]
        t_idx = [np.full(n, -1, np.int64) for _ in range(self.nterms)]
        everything, base = fb.dictionaries() if self.nterms else (None, {})
        k[which == len(self.matches)] = int(RowKind.OTHER)
        for j, (i, f, c) in enumerate(self.matches):
            sel = which == j
            if not sel.any():
                continue
            r = rows[sel]
            k[sel], fact[sel] = c.kind, i
            fid[sel] = combine([cols[x].codes[r] for x in c.binds], len(r))
            for q, x in enumerate(c.binds):
                v[q][sel] = cols[x].codes[r]
            if c.kind == SINCE:
                for q, p in enumerate(f.terms):
                    t_idx[q][sel] = cols[c.binds[p]].idx[r] + base[c.binds[p]]
        out = {"k": pa.array(k), "fact": pa.array(fact), "f": pa.array(fid)}
        out.update((f"v{q}", pa.array(v[q])) for q in range(self.arity))
        for q in range(self.nterms):
            has = t_idx[q] >= 0
            out[f"t{q}"] = everything.take(pa.array(np.where(has, t_idx[q], 0), mask=~has))
        return out

    def from_file(self, fb: FileBatch, order: FileTieOrder) -> pa.RecordBatch | None:
        rows, which, first, pos, count = self.exploded(fb)
        keys = order.keys(fb.first, fb.row0 == 0, pos, count)
        if not len(rows):
            return None
        arrays = self.matched_columns(fb, rows, which)
        arrays.update(ts=pa.array(fb.ts[rows]), o=pa.array(keys), n=pa.array(first.astype(np.int64)),
                      e=pa.array(combine([fb.cols[x].codes[rows] for x in "spo"], len(rows))),
                      b=pa.array(np.zeros(len(rows), np.int32)))
        return pa.RecordBatch.from_arrays([arrays[name] for name in self.schema.names], schema=self.schema)


class ElementRows(Encoding):
    """Whole elements (fallback, windowed), for the operators that match them later."""

    @staticmethod
    def wire(plan) -> pa.Schema:
        return ELEMENT_WIRE

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        out = self.with_order(rb, order).filter(pa.array(kinds == int(ELEMENT)))
        return out if out.num_rows else None

    @staticmethod
    def element_hashes(fb: FileBatch, rows: np.ndarray) -> np.ndarray:
        """The element hash of a file batch's `rows`: of their term codes (`row_hash`)."""
        return row_hash(np.column_stack([fb.cols[c].codes[rows] for c in "spo"]))

    def other_rows(self, ts: np.ndarray, order: pa.Array, hashes: np.ndarray) -> pa.RecordBatch:
        """OTHER rows: time, tie order, element hash, bucket 0 (for the duplicates only)."""
        n = len(ts)
        cols = {"k": pa.array(np.full(n, int(RowKind.OTHER), np.int32)), "ts": pa.array(ts),
                "o": order, "f": pa.array(hashes), "n": pa.array(np.zeros(n, np.int64)),
                "b": pa.array(np.zeros(n, np.int32))}
        return pa.RecordBatch.from_arrays([cols[name] if name in cols else pa.nulls(n, self.schema.field(name).type)
                                           for name in self.schema.names], schema=self.schema)


class GeneralRows(ElementRows):
    """General plans: the whole elements a SINCE/UNTIL clause (joined with the broadcast background,
    filtered) or an event pattern matches, one row per bucket that must see it
    (kernels/general/routing.element_buckets), `n` 1 on an element's first copy (its late count).
    An element that no bucket needs goes to bucket 0 as an OTHER row with its hash in `f` and no
    terms: a repeat of it at the same ms is a duplicate (a stream is a set), which only a place that
    sees every copy can count. Its hash: of its codes (`row_hash`) where the mapper has them; of its
    cells (Spark's xxhash64, `columns.project_general`) for an element of a predicate no pattern
    names, whose terms the projection keeps in the JVM (both copies of one element take one way)."""

    def __init__(self, plan: GeneralPlan, only: int | None = None) -> None:
        super().__init__(plan, only)
        self.cq = plan.compiled()
        self.background, self.background_terms = coded_background(plan.background)

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        other = np.flatnonzero(kinds == int(RowKind.OTHER)) if self.only in (None, 0) else np.zeros(0, np.int64)
        unnamed = [self.other_rows(rb.column("ts").to_numpy()[other], order.take(pa.array(other)),
                                   rb.column("f").to_numpy()[other])] if len(other) else []
        at = np.flatnonzero(kinds == int(ELEMENT))
        if not len(at):
            return unnamed[0] if unnamed else None
        rows = rb.take(pa.array(at))
        el, terms = code_columns(rows.column("ts").to_numpy(), *(rows.column(c).to_numpy(zero_copy_only=False)
                                                                  for c in ("s", "p", "obj")))
        batch_terms = TermDictionary()
        batch_terms.add_mapping(terms)
        return joined(unnamed + [self.routed(el, batch_terms, order.take(pa.array(at)),
                                             lambda row, ordered: self.with_order(rows, ordered).take(pa.array(row)))])

    def from_file(self, fb: FileBatch, order: FileTieOrder) -> pa.RecordBatch | None:
        """The same rows from a Parquet file's batch (runtime/columnar.py): its columns are coded
        already (the same SipHash codes), so only the routing runs, and the terms of the copies
        are taken from the file's dictionaries."""
        relevant = self.relevant(fb)
        at = np.flatnonzero(relevant)
        other = np.flatnonzero(fb.good & ~relevant) if self.only in (None, 0) else np.zeros(0, np.int64)
        keys = order.keys(fb.first, fb.row0 == 0, np.concatenate([at, other]), fb.n)
        keys, other_keys = keys[:len(at)], keys[len(at):]
        unnamed = [self.other_rows(fb.ts[other], pa.array(other_keys),
                                   self.element_hashes(fb, other))] \
            if len(other) else []
        if not len(at):
            return unnamed[0] if unnamed else None
        el = Elements(fb.ts[at], np.arange(len(at), dtype=np.int64),
                      np.column_stack([fb.cols[c].codes[at] for c in "spo"]))
        everything, base = fb.dictionaries()

        def copies(row: np.ndarray, ordered: pa.Array) -> pa.RecordBatch:
            n = len(row)
            cols = {"k": pa.array(np.full(n, int(ELEMENT), np.int32)), "ts": pa.array(el.ts[row]),
                    "o": ordered.take(pa.array(row)), "f": pa.array(np.zeros(n, np.int64)),
                    "n": pa.array(np.zeros(n, np.int64)), "b": pa.array(np.zeros(n, np.int32))}
            for c, name in (("s", "s"), ("p", "p"), ("o", "obj")):
                cols[name] = everything.take(pa.array(fb.cols[c].idx[at[row]] + base[c]))
            return pa.RecordBatch.from_arrays([cols[name] for name in self.schema.names], schema=self.schema)

        return joined(unnamed + [self.routed(el, file_terms(fb), pa.array(keys), copies)])

    def relevant(self, fb: FileBatch) -> np.ndarray:
        """Per row of the file's batch: a good row whose predicate a trigger or an event pattern
        names (`GeneralPlan.relevant_predicates`: what the projection keeps terms of)."""
        predicates = self.plan.relevant_predicates()
        if predicates is None:
            return fb.good.copy()
        p = fb.cols["p"]
        named = np.isin(p.norm.to_numpy(zero_copy_only=False), sorted(predicates))
        return fb.good & (p.idx >= 0) & named[np.maximum(p.idx, 0)] if len(named) else np.zeros(fb.n, bool)

    def routed(self, el: Elements, terms: TermDictionary, ordered: pa.Array, copies: Callable) -> pa.RecordBatch | None:
        """The rows of coded elements `el` (`ordered`: their tie keys): one per bucket that must see
        an element (`copies(rows, ordered)`: those elements' rows in the wire schema), `n` 1 on its
        first copy; OTHER rows for the ones no bucket needs. `only`: bucket `only`'s rows alone."""
        to = element_buckets(self.cq, el, self.background, ChainedTerms(terms, self.background_terms),
                             self.plan.buckets)
        row, bucket = np.nonzero(to)  # row-major: an element's copies together, lowest bucket first
        unrouted = np.flatnonzero(~to.any(axis=1))
        parts = [self.unmatched_rows(el, ordered, unrouted)] if len(unrouted) and self.only in (None, 0) else []
        first = np.ones(len(row), bool)
        first[1:] = row[1:] != row[:-1]
        if self.only is not None:
            mine = bucket == self.only
            row, bucket, first = row[mine], bucket[mine], first[mine]
        if len(row):
            out = copies(row, ordered)
            cols = {"n": pa.array(first.astype(np.int64)), "b": pa.array(bucket.astype(np.int32))}
            parts.append(pa.RecordBatch.from_arrays([cols.get(name, out.column(name)) for name in self.schema.names],
                                                    schema=self.schema))
        return joined(parts)

    def unmatched_rows(self, el: Elements, order: pa.Array, at: np.ndarray) -> pa.RecordBatch:
        """OTHER rows for the elements `at` that no bucket needs."""
        return self.other_rows(el.ts[at], order.take(pa.array(at)), row_hash(el.spo[at]))


def joined(parts: list[pa.RecordBatch | None]) -> pa.RecordBatch | None:
    """The batches that are there, as one (None: none)."""
    parts = [p for p in parts if p is not None]
    return None if not parts else parts[0] if len(parts) == 1 else pa.concat_batches(parts)


def file_terms(fb: FileBatch) -> TermDictionary:
    """code -> term of every term in a file's batch (its three dictionaries' normal forms)."""
    out = TermDictionary()
    for c in "spo":
        col = fb.cols[c]
        ok = col.norm.is_valid().to_numpy(zero_copy_only=False)  # a cell that is not a term has no text
        out.add(col.dict_codes[ok], col.norm.filter(pa.array(ok)).to_numpy(zero_copy_only=False))
    return out
