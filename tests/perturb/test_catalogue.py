"""recaudit.perturb.catalogue: every name of every family, described in words."""

from __future__ import annotations

from recaudit.perturb import available, catalogue
from recaudit.perturb._catalogue import describe


def test_the_catalogue_lists_exactly_the_available_names():
    entries = catalogue()
    assert [e.name for e in entries] == available()
    assert all(e.description for e in entries)
    assert {e.family for e in entries} == {"built-in", "fuzzing (Shriver 2018)"}


def test_descriptions_follow_the_name():
    assert describe("casper-delete-k4")[0].startswith("delete the 4 interactions whose change")
    assert describe("latest-random-replace-unpopular") == (
        "replace the last interaction of a random user with the least popular item",
        "count (or -k<count>)")
    assert describe("tracin-insert-popular")[1] == "count (or -k<count>), checkpoint_every"
    assert describe("remove-end-<n>")[0].startswith("remove <n> interactions at the end")
    assert describe("remove-middle-3")[0].startswith("remove 3 interactions in the middle")
