"""tefq: TEF-SPARQL over event streams. The Python API is in tefq.api (see README, "Python API")."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "compile", "load", "run", "Query", "Result", "TefqError"]
API = frozenset({"compile", "load", "run", "Query", "Result"})


def __getattr__(name: str):
    """The API's names, imported when first asked for: every `import tefq.x` runs this file, and a
    Spark worker needs none of the API (docs/spark.md "Start-up")."""
    if name in API:
        # deferred: a Spark worker imports tefq's packages, not the API (docs/spark.md "Start-up")
        from tefq import api

        return getattr(api, name)
    if name == "TefqError":
        # deferred: as above
        from tefq.errors import TefqError

        return TefqError
    raise AttributeError(f"module 'tefq' has no attribute {name!r}")
