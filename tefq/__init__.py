"""tefq: TEF-SPARQL over event streams. The Python API is in tefq.api (see README, "Python API")."""
__version__ = "0.1.0"

from tefq.api import Query, Result, compile, load, run  # noqa: E402,A004
from tefq.errors import TefqError  # noqa: E402

__all__ = ["__version__", "compile", "load", "run", "Query", "Result", "TefqError"]
