"""Header detection and role mapping of text files (recaudit.data._columns)."""

from __future__ import annotations

import pytest

from recaudit.data import read_csv
from recaudit.data._columns import looks_like_header, resolve_roles
from recaudit.errors import DataError


def _split(text: str) -> tuple[list[str], list[list[str]]]:
    rows = [line.split(",") for line in text.strip().splitlines()]
    return rows[0], rows[1:]


@pytest.mark.parametrize("text,header", [
    ("customer,product\nalice,apple\nbob,pear", True),       # names of the roles' aliases
    ("buyer,sku\nalice,apple\nbob,pear", True),
    ("who,what\nu1,i9\nu2,i3", True),                        # words above ids with digits
    ("who,what,when\nalice,apple,1700000000\nbob,pear,1700000060", True),  # above numbers
    ("a,b,at\nx,y,2024-05-01T10:00:00Z\nz,w,2024-05-02", True),            # above ISO times
    ("alice,apple\nbob,pear\ncarl,plum", False),             # words above words: data
    ("1,10,100\n2,20,50", False),
    ("u1,i1,5\nu2,i2,6", False),
    ("alice,apple,5\nalice,pear,6", False),                  # 'alice' recurs: data
    ("x,y\nx,1\nz,2", False),
])
def test_looks_like_header(text, header):
    first, rest = _split(text)
    assert looks_like_header(first, rest) is header


def test_every_missing_role_is_reported_at_once_with_its_likely_column():
    found, problems = resolve_roles(["customer", "product", "ts"], None, False)
    assert found == {}
    assert [(p.role, p.guess, p.required) for p in problems] == [
        ("user", "customer", True), ("item", "product", True), ("timestamp", "ts", False)]


def test_one_column_is_never_suggested_for_two_roles():
    # 'user_id' is the user's likely column and also the closest name to the item's 'usr_id'
    _, problems = resolve_roles(["user_id", "x"], {"item": "usr_id"}, False)
    assert [(p.role, p.given, p.guess) for p in problems] == [
        ("user", None, "user_id"), ("item", "usr_id", None)]


def test_a_header_of_words_is_read_as_a_header(tmp_path):
    path = tmp_path / "plays.csv"
    path.write_text("customer,product\nalice,apple\nbob,pear\nalice,pear\n")
    with pytest.raises(DataError) as err:
        read_csv(path)
    assert "--column user=customer --column item=product" in err.value.hint
    log = read_csv(path, columns={"user": "customer", "item": "product"})
    assert len(log) == 3 and sorted(log.user_ids) == ["alice", "bob"]


def test_a_mistyped_name_still_finds_the_header(tmp_path):
    path = tmp_path / "plays.csv"
    path.write_text("customer,product\nalice,apple\nbob,pear\n")
    with pytest.raises(DataError) as err:
        read_csv(path, columns={"user": "custmer", "item": "product"})
    assert "no column 'custmer' for the user (did you mean 'customer'?)" in str(err.value)
    assert err.value.column == "custmer"
    assert "columns={'user': 'customer', 'item': 'product'}" in err.value.hint
