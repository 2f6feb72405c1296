"""Plotting is an optional extra (`pip install 'tefq[plot]'`): commands check for it up front."""
from __future__ import annotations

from tefq.errors import TefqError

INSTALL_HINT = "pip install 'tefq[plot]'  (or: pip install matplotlib)"


def require_matplotlib(option: str = "--plot") -> None:
    """Raise a TefqError (exit 2) naming the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise TefqError(f"plotting needs matplotlib, which is not installed: {INSTALL_HINT}", file=option) from None
