"""Formulas rendered as MathML when the site is built: no script, nothing fetched.

``sphinx.ext.mathjax`` leaves ``\\(p = 0.9\\)`` in the page for MathJax to typeset in the browser,
from a CDN: a site built and opened offline showed the raw LaTeX. This renderer converts every
formula to MathML at build time (``latex2mathml``, pure Python), which browsers display
natively (MathML Core: Chromium 109+, Firefox, Safari), so the site reads the same offline and
loads no script for it. A formula the converter cannot read is a build warning (an error
under ``sphinx-build -W``), with its source location; the LaTeX stays in the MathML's
``alttext`` for screen readers and copying.
"""

from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

log = logging.getLogger(__name__)


def _mathml(self, node: nodes.Element, latex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        out = convert(latex, display="block" if display else "inline")
    except Exception as exc:  # noqa: BLE001 - the converter raises many types; reported
        log.warning("cannot render the formula %r as MathML: %s", latex, exc, location=node)
        return f"<code>{escape(latex)}</code>"
    return out.replace("<math ", f'<math alttext="{escape(latex)}" ', 1)


def _inline(self, node: nodes.Element) -> None:
    self.body.append(_mathml(self, node, node.astext(), False))
    raise nodes.SkipNode


def _block(self, node: nodes.Element) -> None:
    if node.get("label"):
        self.body.append(f'<span class="eqno">({node["number"]})</span>')
    self.body.append(f'<div class="math">{_mathml(self, node, node.astext(), True)}</div>')
    raise nodes.SkipNode


def setup(app: Sphinx) -> dict:
    app.add_html_math_renderer("mathml", (_inline, None), (_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
