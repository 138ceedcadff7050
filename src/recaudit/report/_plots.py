"""The report's figure helpers: matplotlib :class:`~matplotlib.figure.Figure` objects, never
pyplot.

Figures are built without touching matplotlib's global backend or pyplot state (each is
drawn by its own canvas, see :func:`to_svg`), so importing or running the report inside
another program changes nothing there. Text from data is drawn literally (mathtext off).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PALETTE", "style", "to_svg", "legend_columns"]

#: Okabe–Ito colour-blind-safe palette (without black and yellow, which print poorly).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C6D31",
           "#999999"]
_RC = {"text.parse_math": False, "font.family": "DejaVu Sans", "font.size": 9,
       "axes.titlesize": 10, "axes.labelsize": 9, "axes.spines.top": False,
       "axes.spines.right": False, "axes.grid": True, "axes.grid.axis": "y",
       "grid.color": "#e3e6ea", "grid.linewidth": 0.8, "axes.axisbelow": True,
       "axes.edgecolor": "#6b7280", "legend.frameon": False, "legend.fontsize": 8,
       "xtick.labelsize": 8, "ytick.labelsize": 8, "svg.fonttype": "path",
       "figure.dpi": 100}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The report's matplotlib settings, for the duration of the block only."""
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # keys are rc names
        yield


def to_svg(fig: Figure, key: str = "") -> str:
    """The figure as an ``<svg>`` element (no XML prolog), ids salted by ``key`` so several
    figures can share one HTML page."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(fig)
    buf = io.StringIO()
    salt = hashlib.sha1(key.encode()).hexdigest()[:10]
    with matplotlib.rc_context({**_RC, "svg.hashsalt": salt}):  # type: ignore[dict-item]
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def _figure(nrows: int, ncols: int, width: float, height: float) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _wrap(text: str, width: int = 24) -> str:
    """``text`` on lines of at most ``width`` characters where it can break (after ``,``,
    ``(``, ``:``, ``-`` or a space), never shortened: labels such as
    ``gru4rec(epochs=10,samples=window)`` stay complete."""
    import re

    out, line = [], ""
    for piece in re.findall(r"[^,(:\s-]*[,(:\s-]?", text):
        if line and len(line) + len(piece) > width:
            out.append(line.rstrip())
            line = ""
        line += piece
    out.append(line.rstrip())
    return "\n".join(x for x in out if x)


#: Width in inches of one character of legend text (8 pt DejaVu Sans, a generous mean).
_CHAR_IN = 0.075
#: Width in inches of a legend handle with its padding.
_HANDLE_IN = 0.55


def _colors(labels: list[str]) -> dict[str, str]:
    return {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(labels)}



def legend_columns(labels: list[str], width: float) -> int:
    """How many legend columns of ``labels`` fit across ``width`` inches (at least one): each
    column is as wide as the longest line of any label plus a handle."""
    longest = max((len(line) for lab in labels for line in lab.split("\n")), default=1)
    return max(1, min(len(labels), int(width // (_HANDLE_IN + _CHAR_IN * longest))))


def _legend(fig: Figure, labels: list[str], colors: dict[str, str],
            kind: str = "patch") -> None:
    """One legend above all panels (outside the axes, so panels keep equal widths), with as
    many columns as fit in the figure's width, so it is never cut off; long labels wrap."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    texts = [_wrap(lab, 40) for lab in labels]
    handles = [Patch(facecolor=colors[lab], label=text) if kind == "patch"
               else Line2D([], [], color=colors[lab], marker="o", label=text)
               for lab, text in zip(labels, texts, strict=True)]
    fig.legend(handles=handles, loc="outside upper center",
               ncols=legend_columns(texts, fig.get_figwidth()))
