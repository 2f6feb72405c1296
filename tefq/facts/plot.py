"""A timeline of a fact table (`tefq facts ... --plot FILE.png`): one row per identity, a bar per
interval, open intervals running off the right edge with an arrow, a colour per fact from the
Okabe-Ito palette (safe for the common colour-vision deficiencies), dates on the time axis.
`--where var=<iri>` keeps the rows whose identity binds `var` to that term."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from tefq import terms
from tefq.errors import TefqError
from tefq.facts.table import FactRow, FactRows
from tefq.io.ntriples import TermError, normalise_term

# Okabe & Ito (2008), "Color Universal Design": distinguishable with protanopia, deuteranopia, tritanopia.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MAX_ROWS = 400  # beyond this a picture is no longer readable: the caller filters with --where
Identity = tuple[str, tuple[tuple[str, str], ...]]


def parse_where(values: Sequence[str] | None) -> list[tuple[str, str]]:
    """`var=<iri>` (also `?var=`, an N-Triples literal, or a bare absolute IRI) as (var, term)."""
    out = []
    for v in values or ():
        name, sep, value = v.partition("=")
        name, value = name.strip().lstrip("?$"), value.strip()
        if not sep or not name or not value:
            raise TefqError(f"--where expects var=<iri>, got '{v}'", "--where")
        if not value.startswith(("<", '"', "_:")) and ":" in value:
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


def _bars(ax, rows: list[FactRow], idents: list[Identity], colours: dict[str, str], right: float) -> None:
    from matplotlib.dates import date2num

    y_of = {k: i for i, k in enumerate(idents)}
    for r in rows:
        y = y_of.get((r.fact, r.identity))
        if y is None:
            continue
        end = right if r.end is None else r.end
        x0, x1 = date2num(_when(r.start)), date2num(_when(end))
        ax.barh(y, x1 - x0, left=x0, height=0.7, color=colours[r.fact], edgecolor="none",
                hatch="///" if r.end is None else None, alpha=0.75 if r.end is None else 1.0)
        if r.end is None:  # open: still true at the end of the input
            ax.plot([x1], [y], marker=">", markersize=7, color=colours[r.fact], clip_on=False)


def plot_timeline(table: FactRows, path: str, title: str = "") -> int:
    """Write the timeline PNG; returns how many identities it shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.patches import Patch

    if not table.rows:
        raise TefqError("no facts to plot (is --where too narrow?)", "--plot")
    idents = _identities(table.rows)
    shown = idents[:MAX_ROWS]
    facts = list(dict.fromkeys(r.fact for r in table.rows))
    colours = {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(facts)}
    last = max(max(r.start, r.end or r.start) for r in table.rows)
    first = min(r.start for r in table.rows)
    right = last + max(1, (last - first) // 20)  # open bars run a little past the last change
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.22 * len(shown)))
    _bars(ax, table.rows, shown, colours, right)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([" · ".join(short(t) for _, t in ident) for _, ident in shown],
                       fontsize=8 if len(shown) < 60 else 6)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set_xlabel("time (UTC); hatched bars with an arrow are still open")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=[Patch(color=colours[f], label=f) for f in facts], loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    cut = f" (first {MAX_ROWS} of {len(idents)} identities: narrow with --where)" if len(idents) > MAX_ROWS else ""
    ax.set_title((title or "facts") + cut, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return len(shown)


__all__ = ["PALETTE", "parse_where", "keep", "short", "plot_timeline"]
