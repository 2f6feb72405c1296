"""What `make demo` prints after its run: the busiest channels at a few moments of the day, from
UC1's result file (viewers per channel every 10 s), the files the run wrote and what to try next.

    python examples/demo/top_channels.py data/demo-uc1.parquet data/demo-uc1.metrics.json
"""
from __future__ import annotations

import json
import sys

import pandas as pd

MOMENTS = ("08:00", "13:00", "20:30")  # UTC, on the data's first day
TOP = 3


def top_channels(rows: pd.DataFrame) -> pd.DataFrame:
    """Per moment, the TOP channels by viewers: `time`, then `1st`, `2nd`, ... as `ch12 (41)`."""
    day = rows["tick"].min().normalize()
    table = []
    for moment in MOMENTS:
        at = rows[rows["tick"] == day + pd.Timedelta(moment + ":00")]
        best = at.sort_values(["USER", "CHANNEL"], ascending=[False, True]).head(TOP)
        ranked = [f"{c.rsplit('#', 1)[-1]} ({n})" for c, n in zip(best["CHANNEL"], best["USER"])]
        table.append([moment] + ranked + [""] * (TOP - len(ranked)))
    return pd.DataFrame(table, columns=["time (UTC)"] + ["1st", "2nd", "3rd"][:TOP])


def main(result: str, metrics: str) -> None:
    rows = pd.read_parquet(result)  # tick a timestamp, CHANNEL the IRI, USER the count (typed columns)
    figures = json.load(open(metrics, encoding="utf-8"))
    print(f"\nThe busiest channels (viewers) at three moments, of {figures['rows_out']:,} rows "
          f"({figures['ticks']:,} ticks, {figures['facts_created']:,} viewing sessions):\n")
    table = top_channels(rows)
    widths = [max(len(str(v)) for v in [name, *table[name]]) for name in table.columns]
    for line in [list(table.columns), *table.values.tolist()]:
        print("  " + "   ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip())
    print(f"\nWritten: {result} (the rows; pandas.read_parquet reads it), {metrics} (the run's figures)")
    print("Next:    tefq run examples/spec10/uc1.tef --stream examples/spec10/events.tsv --engine oracle"
          "\n         (the README's tour; docs/language.md for the language)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
