"""Sphinx configuration of the recaudit documentation (``make docs``).

Sphinx with the PyData theme and MyST Markdown: pages are Markdown, the API reference is read
from the docstrings (reStructuredText, as the code writes them), and the reference pages for
the command line, configuration keys, models and store tables are generated from the code at
build time (``_ext/recaudit_reference.py``), so they cannot drift from it. Warnings are errors
(``sphinx-build -W``); a command, option or key without documentation is a warning.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from recaudit import __version__  # noqa: E402

project = "recaudit"
author = "recaudit developers"
copyright = "2026, recaudit developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "recaudit_reference",
    "recaudit_mathml",
]
# formulas as MathML at build time (_ext/recaudit_mathml.py): the site needs no script and no
# network to show them
html_math_renderer = "mathml"

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# records and helper scripts live beside the pages but are not pages
exclude_patterns = ["_build", "reproduction/records", "checks", "_ext", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "imported-members": True}
# docstrings are written for the terminal and the API pages alike; a reference to a name the
# site does not document (numpy, pandas, ...) is left as literal text rather than a warning
nitpicky = False

html_theme = "pydata_sphinx_theme"
html_title = f"recaudit {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
# the site works from a folder (file://), as the tests open it: no external resources
html_static_path: list[str] = []
