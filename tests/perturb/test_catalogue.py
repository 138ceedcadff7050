"""recaudit.perturb.catalogue: every name of every family, described in words."""

from __future__ import annotations

from recaudit.perturb import available, catalogue
from recaudit.perturb._catalogue import describe


def test_the_catalogue_lists_exactly_the_available_names():
    entries = catalogue()
    assert [e.name for e in entries] == available()
    # recaudit's own families describe every name (other tests may register families of
    # their own, without descriptions)
    own = [e for e in entries if e.family in ("built-in", "fuzzing (Shriver 2018)")]
    assert {e.name for e in own} >= {"seed-only", "casper-delete", "fuzz:AMR:<n>"}
    assert all(e.description for e in own)


def test_descriptions_follow_the_name():
    assert describe("casper-delete-k4")[0].startswith("delete the 4 interactions whose change")
    assert describe("latest-random-replace-unpopular") == (
        "replace the last interaction of a random user with the least popular item",
        "count (or -k<count>)")
    assert describe("tracin-insert-popular")[1] == "count (or -k<count>), checkpoint_every"
    assert describe("remove-end-<n>")[0].startswith("remove <n> interactions at the end")
    assert describe("remove-middle-3")[0].startswith("remove 3 interactions in the middle")
