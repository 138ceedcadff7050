"""Reports: the papers' tables and figures from any recaudit results file.

``write_report(store, "report.html")`` renders one self-contained HTML page (figures inline
as SVG, CSS inline, no scripts, no network); ``fmt="markdown" | "latex" | "csv"`` writes the
tables only. :func:`build_report` gives the tables (:class:`Table`) and figures as data for
other renderers. Needs the ``report`` extra (matplotlib, jinja2), imported only when used.

Every section appears only where the store has its data: RLS tables and distributions
(always), accuracy with/without perturbation, user groups, RLS versus number of
perturbations (families run at several counts, as the store's descriptions say), CASPER
runtime versus data size (store meta ``casper_runtime``: a list of ``{"interactions",
"seconds", "label"}``, or CASPER trials on two or more datasets), position removal, and the
audit's configuration, data summary, versions and timings.

The same file (or a file of its own) may also hold the other studies, each rendered where
present: property templates (``recaudit properties -o``: Shriver 2018 Tables 3.4 and 3.6),
fuzzing (``recaudit fuzz``: Tables 4.5-4.9 with the Welch marks) and MIRROR
(``recaudit simulate mirror -o``: its table and Zhu et al. 2023 Figures 7, 8, 10). The page says
what the file holds (:attr:`ReportData.kinds`); a file with none of them is an error.
"""

from recaudit.report._build import FigureItem, Report, Section, build_report
from recaudit.report._data import PerturbationInfo, ReportData, load
from recaudit.report._html import render_html, write_report
from recaudit.report._mirror import write_mirror_figures
from recaudit.report._output import is_report, report_format
from recaudit.report._render import render_latex, render_markdown, write_csv
from recaudit.report._document import Cell, Table

__all__ = ["Cell", "FigureItem", "PerturbationInfo", "Report", "ReportData", "Section",
           "Table", "build_report", "is_report", "load", "render_html", "render_latex",
           "render_markdown", "report_format", "write_csv", "write_mirror_figures",
           "write_report"]
