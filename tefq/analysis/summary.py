"""One line per statement of a bound document, for `tefq parse`."""
from __future__ import annotations

from tefq.plan import logical as L
from tefq.vocabulary import format_ms


def _vars(vs: tuple[L.Var, ...]) -> str:
    return ", ".join("?" + v.name for v in vs)


def summary(doc: L.Document) -> list[str]:
    """`fact UserFact: identity (?user, ?channel); 1 SINCE, 1 UNTIL`, `query q1: aggregate every
    10s, group by ?channel -> CHANNEL, USER`, `query X: windowed select, stream <iri> range 10s tumbling`."""
    lines: list[str] = []
    for f in doc.facts:
        if isinstance(f, L.EventFact):
            lines.append(f"fact {f.name}: identity ({_vars(f.identity)}); {len(f.since)} SINCE, {len(f.until)} UNTIL")
        else:
            on = ", ".join(dict.fromkeys(n for wp in f.body for n in wp.facts))
            lines.append(f"fact {f.name}: identity ({_vars(f.identity)}); derived from {on}")
    for q in doc.queries:
        if isinstance(q, L.AggregateQuery):
            group = f", group by {_vars(q.group_by)}" if q.group_by else ""
            scope = f", while {q.while_.facts[0]}" if q.while_ is not None and q.while_.facts else ""
            outs = ", ".join(p.name for p in q.select)
            lines.append(f"query {q.name}: aggregate every {format_ms(q.every_ms)}{group}{scope} -> {outs}")
        else:
            wins = "; ".join(
                f"stream {'<' + w.iri + '>' if w.iri else '(default)'} range {format_ms(w.range_ms)} "
                + ("tumbling" if w.step_ms == w.range_ms else f"step {format_ms(w.step_ms)}")
                for w in q.windows)
            kind = "windowed " + q.form + (" (registers a stream)" if q.registers_stream else "")
            kind += f" {q.r2s.upper()}" if q.r2s != "rstream" else ""
            outs = f" -> {', '.join(q.select_names)}" if q.select_names else ""
            lines.append(f"query {q.name}: {kind}, {wins}{outs}")
    return lines
