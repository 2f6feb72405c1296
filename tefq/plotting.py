"""Plotting is an optional extra (`pip install 'tefq[plot]'`): commands check for it, and for the
picture they are asked to write, up front (not after a long run)."""
from __future__ import annotations

import os

from tefq.errors import TefqError
from tefq.io.atomic import check_writable

INSTALL_HINT = "pip install 'tefq[plot]'  (or: pip install matplotlib)"


def require_matplotlib(option: str = "--plot") -> None:
    """Raise a TefqError (exit 2) naming the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise TefqError(f"plotting needs matplotlib, which is not installed: {INSTALL_HINT}", file=option) from None


def check_plot(path: str, option: str = "--plot") -> None:
    """Before the run: matplotlib installed, a picture format it writes named by `path`'s extension
    (`.png`, `.svg`, `.pdf`, ...), and a place it can be written."""
    require_matplotlib(option)
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    extension = os.path.splitext(path)[1].lstrip(".").lower()
    if extension not in formats:
        raise TefqError(f"{path}: the picture's extension names its format, one of {', '.join(sorted(formats))}",
                        file=option)
    check_writable(path, option)
