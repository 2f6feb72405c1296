"""A timeline of a fact table (`tefq facts ... --plot FILE.png`): one row per identity, a bar per
interval, open intervals running off the right edge with an arrow, a colour per fact from the
Okabe-Ito palette (safe for the common colour-vision deficiencies), the time in UTC on a top and
a bottom axis, in units the span calls for (seconds, hours, days). `--limit N` identities (the
first N to start; default one screen's worth); `--where var=TERM` (an IRI, a prefixed name of the
document such as `:ch42`, a literal) keeps the rows whose identity binds `var` to that term."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from tefq import terms
from tefq.errors import TefqError
from tefq.facts.table import FactRow, FactRows
from tefq.io.ntriples import TermError, normalise_term

# Okabe & Ito (2008), "Color Universal Design": distinguishable with protanopia, deuteranopia, tritanopia.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
SCREEN_ROWS = 40  # identities that fit a screen at 0.22 in each (--limit's default)
MAX_ROWS = 400  # beyond this a picture is no longer readable: narrow with --where
Identity = tuple[str, tuple[tuple[str, str], ...]]


def parse_where(values: Sequence[str] | None, prefixes: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`var=<iri>` (also `?var=`, an N-Triples literal, a bare absolute IRI, or a prefixed name of
    `prefixes`, the document's: `channel=:ch42`) as (var, term)."""
    out = []
    for v in values or ():
        name, sep, value = v.partition("=")
        name, value = name.strip().lstrip("?$"), value.strip()
        if not sep or not name or not value:
            raise TefqError(f"--where expects var=<iri> or var=prefix:name, got '{v}'", "--where")
        prefix, colon, local = value.partition(":")
        if not value.startswith(("<", '"', "_:")) and colon and prefix in (prefixes or {}):
            value = f"<{(prefixes or {})[prefix]}{local}>"
        elif not value.startswith(("<", '"', "_:")) and colon:
            if "//" not in value and "urn" != prefix.lower():
                known = ", ".join(f"{p}:" for p in prefixes or {}) or "none"
                raise TefqError(f"--where {v}: the prefix '{prefix}:' is not the document's (it declares {known}; "
                                "or give the IRI in full, <...>)", "--where")
            value = f"<{value}>"
        try:
            out.append((name, normalise_term(value)))
        except TermError as e:
            raise TefqError(f"--where {v}: {e}", "--where") from None
    return out


def keep(table: FactRows, where: Sequence[tuple[str, str]]) -> FactRows:
    for name, _ in where:
        if name not in table.columns:
            raise TefqError(f"--where {name}=...: no fact has an identity variable ?{name} "
                            f"(they have {', '.join('?' + c for c in table.columns) or 'none'})", "--where")
    return FactRows(table.columns, [r for r in table.rows if all(r.cell(n) == t for n, t in where)])


def short(term: str) -> str:
    """A term as a person reads it on an axis: an IRI's local name, a literal's text."""
    if terms.is_iri(term):
        value = terms.iri_value(term)
        return value.rsplit("#", 1)[-1].rsplit("/", 1)[-1] or value
    return terms.split_literal(term)[0] if terms.is_literal(term) else term


def _when(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _identities(rows: list[FactRow]) -> list[Identity]:
    """Identities in order of their first start (then by fact and terms)."""
    first: dict[Identity, int] = {}
    for r in rows:
        key = (r.fact, r.identity)
        first[key] = min(first.get(key, r.start), r.start)
    return sorted(first, key=lambda k: (first[k], k))


def _bars(ax, rows: list[FactRow], idents: list[Identity], colours: dict[str, str], right: float,
          least_ms: float) -> None:
    """A bar per interval (at least `least_ms` wide: a four-second session stays visible on a day)."""
    from matplotlib.dates import date2num

    y_of = {k: i for i, k in enumerate(idents)}
    for r in rows:
        y = y_of.get((r.fact, r.identity))
        if y is None:
            continue
        end = right if r.end is None else max(r.end, r.start + least_ms)
        x0, x1 = date2num(_when(r.start)), date2num(_when(end))
        ax.barh(y, x1 - x0, left=x0, height=0.7, color=colours[r.fact], edgecolor="none",
                hatch="///" if r.end is None else None, alpha=0.75 if r.end is None else 1.0)
        if r.end is None:  # open: still true at the end of the input
            ax.plot([x1], [y], marker=">", markersize=7, color=colours[r.fact], clip_on=False)


def time_format(first_ms: int, last_ms: int) -> tuple[str, str]:
    """The time axis' label format for a span, and the axis title naming what the labels leave out."""
    span = last_ms - first_ms
    day = _when(first_ms).strftime("%Y-%m-%d")
    if span < 120_000:
        return "%H:%M:%S", f"time (UTC) on {day}, hh:mm:ss"
    if _when(first_ms).date() == _when(last_ms).date():
        return "%H:%M", f"time (UTC) on {day}, hh:mm"
    if span < 5 * 86_400_000:
        return "%b %d\n%H:%M", "time (UTC)"
    return "%Y-%m-%d", "date (UTC)"


def check_limit(limit: int) -> None:
    """`--limit`: how many identities a readable picture holds."""
    if not 1 <= limit <= MAX_ROWS:
        raise TefqError(f"--limit takes 1 to {MAX_ROWS} identities (a taller picture is not readable: narrow the "
                        "facts with --where)", "--limit")


def plot_timeline(table: FactRows, path: str, title: str = "", limit: int = SCREEN_ROWS) -> int:
    """Write the timeline PNG of the first `limit` identities to start; returns how many it shows."""
    import matplotlib.pyplot as plt

    fig, shown = timeline_figure(table, title, limit)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return shown


def timeline_figure(table: FactRows, title: str = "", limit: int = SCREEN_ROWS):  # -> (Figure, identities shown)
    """The timeline of the first `limit` identities to start, as a matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.dates import AutoDateLocator, DateFormatter
    from matplotlib.patches import Patch

    if not table.rows:
        raise TefqError("no facts to plot (is --where too narrow?)", "--plot")
    check_limit(limit)
    idents = _identities(table.rows)
    shown = idents[:limit]
    facts = list(dict.fromkeys(r.fact for r in table.rows))
    colours = {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(facts)}
    keys = set(shown)
    rows = [r for r in table.rows if (r.fact, r.identity) in keys]  # the axis spans what is shown
    last = max(max(r.start, r.end or r.start) for r in table.rows)  # open bars run to the input's end ...
    first = min(r.start for r in rows)
    right = last + max(1, (last - first) // 20)  # ... and a little past it
    seen = max(max(r.start, r.end or right) for r in rows)
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.22 * len(shown)))
    _bars(ax, rows, shown, colours, right, (seen - first) / 400)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([" · ".join(short(t) for _, t in ident) for _, ident in shown],
                       fontsize=8 if len(shown) < 60 else 6)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    fmt, label = time_format(first, seen)
    ax.xaxis.set_major_locator(AutoDateLocator(maxticks=10))
    ax.xaxis.set_major_formatter(DateFormatter(fmt, tz=timezone.utc))
    ax.tick_params(axis="x", top=True, labeltop=True, labelsize=8)  # the axis on top too: a tall chart
    ax.set_xlabel(f"{label}; hatched bars with an arrow are still open")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=[Patch(color=colours[f], label=f) for f in facts], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    cut = (f"\nthe first {len(shown)} of {len(idents):,} identities to start (--limit N; --where var=TERM narrows)"
           if len(idents) > len(shown) else "")
    ax.set_title((title or "facts") + cut, fontsize=10)
    fig.tight_layout()
    return fig, len(shown)


__all__ = ["PALETTE", "SCREEN_ROWS", "parse_where", "keep", "short", "time_format", "plot_timeline", "timeline_figure"]
