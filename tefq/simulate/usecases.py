"""Where the use-cases' query files are (shared by `tefq usecase`, `tefq compare` and the C-SPARQL runs)."""
from __future__ import annotations

import os

from tefq.errors import TefqError


def usecase_path(name: str) -> str:
    """The use-case document shipped in the package (tefq/usecases/, package data; in a source
    checkout a link to usecases/), whatever the working directory holds: `tefq usecase` and
    `tefq compare` run the paper's queries, not a `usecases/` folder that happens to be there (a
    document of one's own: `tefq compare --query FILE.tef`, `tefq run FILE.tef`)."""
    p = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "usecases", f"{name}.tef")
    if not os.path.isfile(p):
        raise TefqError(f"cannot find the packaged use-case {name} ({p}): the package was installed without its "
                        "data (reinstall tefq)", file="--usecase")
    return p
