"""Audit reports: the seeds' tables and figures from any audit store.

``write_report(store, "report.html")`` renders one self-contained HTML page (figures inline
as SVG, CSS inline, no scripts, no network); ``fmt="markdown" | "latex" | "csv"`` writes the
tables only. :func:`build_report` gives the tables (:class:`Table`) and figures as data for
other renderers. Needs the ``report`` extra (matplotlib, jinja2), imported only when used.

Every section appears only where the store has its data: RLS tables and distributions
(always), accuracy with/without perturbation, user groups, RLS versus number of
perturbations (labels such as ``casper-delete-k4``), CASPER runtime versus data size (store
meta ``casper_runtime``: a list of ``{"interactions", "seconds", "label"}``, or CASPER trials
on two or more datasets), position removal (``remove-<where>-<n>``), and the audit's
configuration, data summary, versions and timings.
"""

from recaudit.report._build import FigureItem, Report, Section, build_report
from recaudit.report._data import ReportData, load
from recaudit.report._html import render_html, write_report
from recaudit.report._labels import PerturbationInfo, parse_label
from recaudit.report._render import render_latex, render_markdown, write_csv
from recaudit.report._tables import Cell, Table

__all__ = ["Cell", "FigureItem", "PerturbationInfo", "Report", "ReportData", "Section",
           "Table", "build_report", "load", "parse_label", "render_html", "render_latex",
           "render_markdown", "write_csv", "write_report"]
