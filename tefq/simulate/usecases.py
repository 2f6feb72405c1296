"""Where the use-cases' query files are (shared by `tefq compare` and the C-SPARQL runs)."""
from __future__ import annotations

import os

from tefq.errors import TefqError


def usecase_path(name: str) -> str:
    """usecases/<name>.tef next to the package (a source checkout) or in the working directory."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for base in (os.getcwd(), here):
        p = os.path.join(base, "usecases", f"{name}.tef")
        if os.path.isfile(p):
            return p
    raise TefqError(f"cannot find usecases/{name}.tef (run from the tefq checkout, or pass --query FILE.tef)",
                    file="--usecase")
