import pytest

from recaudit.report import parse_label


@pytest.mark.parametrize("label, family, count, position", [
    ("random-delete", "random-delete", None, None),
    ("latest-random-delete", "latest-random-delete", None, None),
    ("casper-delete-k4", "casper-delete", 4, None),
    ("casper-replace-unpopular-k8", "casper-replace-unpopular", 8, None),
    ("casper-delete:k=3", "casper-delete", 3, None),
    ("remove-end-5", "remove-end", 5, "end"),
    ("remove-beginning-10", "remove-beginning", 10, "beginning"),
    ("remove-middle-1", "remove-middle", 1, "middle"),
    ('{"kind":"position","n":3,"where":"middle"}', "remove-middle", 3, "middle"),
    ('{"count":2,"name":"casper-delete"}', "casper-delete", 2, None),
    ("none", "none", None, None),
    ("seed-only", "seed-only", None, None),
])
def test_parse_label(label, family, count, position):
    info = parse_label(label)
    assert (info.family, info.count, info.position) == (family, count, position)
    assert info.label == label
    assert info.reference == (label in ("none", "seed-only"))


def test_words_containing_position_names_are_not_positions():
    # "end" inside "append" or "latest" must not make a position-removal label
    for label in ("append-delete", "latest-random-delete", "random-insert-unpopular"):
        assert parse_label(label).position is None
