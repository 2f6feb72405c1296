"""Terms as int64 codes, the coded input batch, and which bucket a code belongs to.

A term's code is pandas' SipHash-2-4 of its N-Triples text (`encode`): the same in every process
and run, vectorised in C, and the function the columnar ingestion already uses
(`tefq.spark.runtime.columnar.term_codes`), so a mapper can code terms before the shuffle and every
bucket and the driver agree on them. A bucket keeps the text of the codes it may have to evaluate or
print in a `TermDictionary`: two arrays, so it serialises as Arrow or npz like the rest of the state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from tefq.semantics.values import value_term


_GOLDEN, _M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def row_hash(codes: np.ndarray) -> np.ndarray:
    """One int64 per row of codes (an identity's `fid`), splitmix64 over the columns in order."""
    h = np.full(len(codes), np.uint64(codes.shape[1]), np.uint64)
    with np.errstate(over="ignore"):
        for j in range(codes.shape[1]):
            h = h * _GOLDEN + codes[:, j].view(np.uint64)
            h = (h ^ (h >> np.uint64(30))) * _M1
            h = (h ^ (h >> np.uint64(27))) * _M2
            h = h ^ (h >> np.uint64(31))
    return h.view(np.int64)


def encode(terms: Sequence[str]) -> np.ndarray:
    """One int64 code per N-Triples term."""
    import pandas as pd

    arr = np.empty(len(terms), dtype=object)
    arr[:] = list(terms)
    return pd.util.hash_array(arr, categorize=False).view(np.int64)


def encode_one(term: str) -> int:
    return int(encode([term])[0])


def bucket_of(codes: np.ndarray, buckets: int) -> np.ndarray:
    """The bucket of each code: the codes are hashes already, so their value mod B (non-negative)."""
    return (codes.view(np.uint64) % np.uint64(buckets)).astype(np.int64)


def value_buckets(codes: np.ndarray, buckets: int, terms) -> np.ndarray:
    """The bucket of each code by its term's value: a literal goes where its canonical spelling's
    code goes (`"01"` and `"1"^^xsd:integer`, one instant in two time zones: one bucket, as a
    DISTINCT counts them once), any other term where its own code goes (`bucket_of`). `terms`
    knows every literal's text (a bucket and a mapper hold the terms of the elements they see)."""
    uniq, inverse = np.unique(codes, return_inverse=True)
    texts = terms.lookup(uniq).tolist()
    literal = [i for i, t in enumerate(texts) if t is not None and t.startswith('"')]
    if literal:
        uniq = uniq.copy()
        uniq[literal] = encode([value_term(texts[i]) for i in literal])
    return bucket_of(uniq, buckets)[inverse.reshape(-1)]


class TermDictionary:
    """code -> N-Triples text for the codes a bucket may evaluate or print, as two sorted arrays."""

    codes: np.ndarray
    terms: np.ndarray  # object: str

    def __init__(self, codes: np.ndarray | None = None, terms: np.ndarray | None = None) -> None:
        self.codes = np.zeros(0, np.int64) if codes is None else codes
        self.terms = np.zeros(0, dtype=object) if terms is None else terms

    def __len__(self) -> int:
        return len(self.codes)

    def add(self, codes: np.ndarray, terms: Sequence[str]) -> None:
        """Learn pairs (codes already known keep their text)."""
        if not len(codes):
            return
        t = np.empty(len(terms), dtype=object)
        t[:] = list(terms)
        allc = np.concatenate([self.codes, np.asarray(codes, np.int64)])
        allt = np.concatenate([self.terms, t])
        uniq, first = np.unique(allc, return_index=True)
        self.codes, self.terms = uniq, allt[first]

    def add_mapping(self, pairs: Mapping[int, str]) -> None:
        self.add(np.fromiter(pairs.keys(), np.int64, len(pairs)), list(pairs.values()))

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """The terms of `codes` (object array; None for an unknown code)."""
        pos = np.searchsorted(self.codes, codes)
        pos_c = np.minimum(pos, max(len(self.codes) - 1, 0))
        out = np.full(len(codes), None, dtype=object)
        if len(self.codes):
            hit = self.codes[pos_c] == codes
            out[hit] = self.terms[pos_c[hit]]
        return out

    def mapping(self, codes: Iterable[int]) -> dict[int, str]:
        """code -> term for the known ones among `codes` (what travels with a bucket's rows)."""
        c = np.unique(np.fromiter(codes, np.int64))
        terms = self.lookup(c)
        return {int(k): v for k, v in zip(c.tolist(), terms.tolist()) if v is not None}

    def keep(self, codes: np.ndarray) -> None:
        """Forget every code not in `codes` (pruning with the state)."""
        mask = np.isin(self.codes, codes)
        self.codes, self.terms = self.codes[mask], self.terms[mask]


@dataclass
class Elements:
    """Coded stream elements: time, order of ties (stream order), and s, p, o codes."""

    ts: np.ndarray
    order: np.ndarray
    spo: np.ndarray  # (n, 3) int64

    def __len__(self) -> int:
        return len(self.ts)

    @staticmethod
    def empty() -> "Elements":
        z = np.zeros(0, np.int64)
        return Elements(z, z.copy(), np.zeros((0, 3), np.int64))

    def take(self, idx: np.ndarray) -> "Elements":
        return Elements(self.ts[idx], self.order[idx], self.spo[idx])

    def by_time(self) -> "Elements":
        """Sorted by time (stable: ties keep their order), so that the elements up to a time are a prefix."""
        if len(self) < 2 or bool(np.all(self.ts[1:] >= self.ts[:-1])):
            return self
        return self.take(np.argsort(self.ts, kind="stable"))

    def split(self, k: int) -> tuple["Elements", "Elements"]:
        """The first `k` elements and the rest (views)."""
        return (Elements(self.ts[:k], self.order[:k], self.spo[:k]),
                Elements(self.ts[k:], self.order[k:], self.spo[k:]))

    @staticmethod
    def concat(parts: list["Elements"]) -> "Elements":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Elements.empty()
        return Elements(np.concatenate([p.ts for p in parts]), np.concatenate([p.order for p in parts]),
                        np.concatenate([p.spo for p in parts]))

    def in_time_order(self) -> "Elements":
        """Sorted by (ts, order), the same element twice at one ms kept once (a stream is a set).
        Only elements sharing their ms with a neighbour can be repeats: only those get compared."""
        n = len(self)
        if n < 2:
            return self
        ts, order = self.ts, self.order
        in_order = bool(np.all((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (order[1:] > order[:-1]))))
        e = self if in_order else self.take(np.lexsort((order, ts)))
        same = e.ts[1:] == e.ts[:-1]
        if not same.any():
            return e
        run = np.zeros(n, bool)
        run[1:] |= same
        run[:-1] |= same
        cand = np.nonzero(run)[0]
        sub = cand[np.lexsort((e.order[cand], e.spo[cand, 2], e.spo[cand, 1], e.spo[cand, 0], e.ts[cand]))]
        dup = np.zeros(len(sub), bool)
        dup[1:] = (e.ts[sub[1:]] == e.ts[sub[:-1]]) & (e.spo[sub[1:]] == e.spo[sub[:-1]]).all(axis=1)
        if not dup.any():
            return e
        keep = np.ones(n, bool)
        keep[sub[dup]] = False
        return e.take(np.nonzero(keep)[0])


def code_elements(rows: Sequence[tuple[int, str, str, str]], first_order: int = 0,
                  ) -> tuple[Elements, dict[int, str]]:
    """(ts, s, p, o) rows in stream order as Elements, and the code -> term pairs they use (what a
    mapper sends; tests and the bench build batches with it)."""
    n = len(rows)
    ts = np.fromiter((r[0] for r in rows), np.int64, n)
    flat = [t for r in rows for t in r[1:]]
    uniq = list(dict.fromkeys(flat))
    codes = encode(uniq)
    index = {t: i for i, t in enumerate(uniq)}
    spo = codes[np.fromiter((index[t] for t in flat), np.int64, len(flat))].reshape(n, 3)
    order = np.arange(first_order, first_order + n, dtype=np.int64)
    return Elements(ts, order, spo), dict(zip(codes.tolist(), uniq))


class ChainedTerms:
    """Lookups in a bucket's dictionary, then in the background's (constant) one."""

    def __init__(self, *dictionaries: TermDictionary) -> None:
        self.dictionaries = dictionaries

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        out = self.dictionaries[0].lookup(codes)
        for d in self.dictionaries[1:]:
            missing = np.nonzero(np.equal(out, None))[0]
            if not len(missing):
                break
            out[missing] = d.lookup(codes[missing])
        return out

    def mapping(self, codes: Iterable[int]) -> dict[int, str]:
        c = np.unique(np.fromiter(codes, np.int64))
        return {int(k): v for k, v in zip(c.tolist(), self.lookup(c).tolist()) if v is not None}


def code_columns(ts: np.ndarray, s: np.ndarray, p: np.ndarray, o: np.ndarray, first_order: int = 0,
                 ) -> tuple[Elements, dict[int, str]]:
    """`code_elements` for columns (object arrays of terms): each distinct term hashed once."""
    import pandas as pd

    flat = np.concatenate([s, p, o])
    index, uniq = pd.factorize(flat)
    codes = encode(list(uniq))
    spo = codes[index].reshape(3, len(ts)).T.copy()
    order = np.arange(first_order, first_order + len(ts), dtype=np.int64)
    return Elements(np.asarray(ts, np.int64), order, spo), dict(zip(codes.tolist(), list(uniq)))


def code_categorical(ts: np.ndarray, s, p, o, first_order: int = 0) -> tuple[Elements, dict[int, str]]:
    """`code_columns` for pandas Categorical columns (direct ingestion, operators/base.coded_frames):
    each column's categories hashed once, the rows' codes taken from them (the same codes)."""
    spo, terms = [], {}
    for col in (s, p, o):
        cats = list(col.categories)
        codes = encode(cats) if cats else np.zeros(0, np.int64)
        spo.append(codes[np.asarray(col.codes, np.int64)] if len(codes) else np.zeros(len(col), np.int64))
        terms.update(zip(codes.tolist(), cats))
    order = np.arange(first_order, first_order + len(ts), dtype=np.int64)
    return Elements(np.asarray(ts, np.int64), order, np.column_stack(spo)), terms
