"""The windowed oracle (spec §8): C-SPARQL-style windowed queries evaluated under any engine's
SECRET semantics, to run them (`run`) and to check other engines' answers (`tefq oracle check`).
See docs/windowed-oracle.md."""
from tefq.oracle.windowed.runner import WindowedResults, run
from tefq.oracle.windowed.secret import DEFAULT, YABENCH, Semantics

__all__ = ["run", "WindowedResults", "Semantics", "DEFAULT", "YABENCH"]
