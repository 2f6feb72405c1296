"""What a `--checkpoint` belongs to: the document, the stream paths, the options that change
results and the directory's own location, recorded at the first run (`tefq-identity.json`).

A restart with anything different is refused with exit 2 naming what changed: operator state
built under one query (or one EVERY, one set of streams) would otherwise answer another with
exit 0 (issue 26). A moved or copied checkpoint is refused too: Spark's logs inside it hold
absolute paths (its sink log and staged file names), so it cannot resume elsewhere.

The document is compared in a normalised form: its bound plan (facts and queries) without source
positions, so comments, blank lines and prefix spellings do not count, while any change to a
pattern, a filter, an aggregate or EVERY does.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any

from rdflib import BNode

from tefq.errors import TefqError
from tefq.io.atomic import write_marker
from tefq.io.rdf import Background
from tefq.io.redis_stream import RedisStream, is_redis_url
from tefq.plan.logical import AggregateQuery, Document
from tefq.vocabulary import RunSettings

IDENTITY = "tefq-identity.json"


def normalised(value: Any) -> Any:
    """A plan value as JSON-able data in a stable order: dataclass fields that take part in
    equality (source spans do not), sets sorted, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__] + [normalised(getattr(value, f.name)) for f in dataclasses.fields(value)
                                         if f.compare]
    if isinstance(value, (list, tuple)):
        return [normalised(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((normalised(v) for v in value), key=repr)
    if isinstance(value, dict):
        return sorted(([repr(k), normalised(v)] for k, v in value.items()), key=lambda kv: kv[0])
    return value


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(normalised(value), default=repr).encode("utf-8")).hexdigest()[:16]


def every_text(ms: int) -> str:
    return f"PT{ms // 1000}S" if ms % 1000 == 0 else f"{ms} ms"


def query_identity(query: Any) -> dict:
    """One query's plan digest, with its EVERY spelled out (the commonest change, named as such)."""
    if not isinstance(query, AggregateQuery):
        return {"plan": digest(query)}
    return {"plan": digest(dataclasses.replace(query, every_ms=0)), "every": every_text(query.every_ms)}


def background_digest(background: Background | None) -> str | None:
    """The background graph's triples, blank nodes as one label (rdflib numbers them afresh on each load)."""
    if background is None:
        return None
    triples = [tuple(t[:3]) for t in background.graph]
    lines = sorted(" ".join("_:b" if isinstance(t, BNode) else t.n3() for t in triple) for triple in triples)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def identity_of(directory: str, doc: Document, stream_paths: list[str], *, background: Background | None = None,
                settings: RunSettings = RunSettings()) -> dict:
    """The identity a run on `directory` would record (see the module doc)."""
    return {"location": os.path.realpath(directory),
            "facts": digest(doc.facts),
            "queries": {q.name: query_identity(q) for q in doc.queries},
            "streams": [stream_identity(p) for p in stream_paths],
            "options": {"t0": settings.t0, "lateness_ms": settings.lateness_ms,
                        "background": background_digest(background)}}


def stream_identity(path: str) -> str:
    """A stream path as an absolute path; a Redis stream as its URL (host, port and key: a restart
    on another stream would resume at entry IDs that mean nothing there)."""
    return RedisStream.parse(path).url if is_redis_url(path) else os.path.abspath(path)


def changes(old: dict, new: dict) -> list[str]:
    """What differs between a recorded identity and this run's, in words."""
    found = []
    if old.get("facts") != new["facts"]:
        found.append("the document's facts (DEFINE ... FACT) changed")
    old_q, new_q = old.get("queries", {}), new["queries"]
    if sorted(old_q) != sorted(new_q):  # recorded with sorted keys: the order does not count
        found.append(f"the queries were {', '.join(old_q) or 'none'}, now {', '.join(new_q)}")
    for name in (n for n in new_q if n in old_q):
        if old_q[name].get("every") != new_q[name].get("every"):
            found.append(f"query {name}: EVERY was {old_q[name].get('every')}, now {new_q[name].get('every')}")
        if old_q[name].get("plan") != new_q[name].get("plan"):
            found.append(f"query {name} changed (its patterns, filters, grouping or aggregates)")
    if old.get("streams") != new["streams"]:
        found.append(f"the --stream set was {' '.join(old.get('streams', []))}, now {' '.join(new['streams'])}")
    for option, value in new["options"].items():
        if old.get("options", {}).get(option) != value:
            found.append(f"{option_name(option)} was {old.get('options', {}).get(option)}, now {value}")
    return found


def option_name(option: str) -> str:
    return {"t0": "--t0", "lateness_ms": "--lateness (ms)", "background": "the --background content"}.get(option,
                                                                                                       option)


def read_identity(path: str) -> dict | None:
    """The recorded identity; None if there is none. An unreadable record is refused (exit 2)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            recorded = json.load(fh)
        if not isinstance(recorded, dict):
            raise ValueError("not an object")
        return recorded
    except (OSError, ValueError) as e:
        raise TefqError(f"this checkpoint's record of what it belongs to is unreadable ({e}): use a fresh "
                        "--checkpoint", path) from None


def claim_identity(directory: str, identity: dict, stateful: bool) -> None:
    """Record `identity` in a checkpoint without state yet (`stateful` False: a run that stopped
    before its first micro-batch left nothing to answer for); refuse (exit 2) to resume one with
    state recorded otherwise."""
    path = os.path.join(directory, IDENTITY)
    recorded = read_identity(path)
    if recorded is None or (not stateful and recorded != identity):
        write_marker(path, json.dumps(identity, sort_keys=True))
        return
    if recorded.get("location") != identity["location"]:
        raise TefqError(f"this checkpoint was written at {recorded.get('location')} and has been moved or copied "
                        "here: Spark's logs in it name files by absolute path, so it resumes only where it was "
                        "written; move it back, or use a fresh --checkpoint", directory)
    found = changes(recorded, identity)
    if found:
        raise TefqError("this checkpoint belongs to another run: " + "; ".join(found) + ". Its state answers "
                        "only the run that wrote it: rerun with the same query, streams and options, or use "
                        "a fresh --checkpoint", directory)
