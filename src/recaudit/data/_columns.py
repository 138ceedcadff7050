"""Which column plays which role, and whether a text file's first line names its columns.

:func:`resolve_roles` maps the roles ``user``, ``item``, ``timestamp`` and ``rating`` to the
columns of a raw table: a column named after its role is used as it is, any other needs an
explicit mapping (``--column ROLE=NAME`` on the command line, ``options = {columns = ...}`` in
a ``[[datasets]]`` table, ``columns=...`` in Python). A column whose name is close to a role
(``user_id``, ``customer``, ``ts``, ...) is never used silently: the error lists the table's
columns and every mapping still missing, with the closest columns filled in.

:func:`looks_like_header` decides whether the first line of a headerless-looking text file is
a header (see its docstring for the rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from recaudit.errors import closest

__all__ = ["ROLES", "ALIASES", "RoleProblem", "resolve_roles", "roles_hint",
           "looks_like_header"]

#: The roles a column can play, in canonical order.
ROLES: tuple[str, ...] = ("user", "item", "timestamp", "rating")

#: Column names that very probably mean a role: suggested in errors, never used silently.
ALIASES: dict[str, tuple[str, ...]] = {
    "user": ("user_id", "userid", "uid", "customer", "customer_id", "customerid", "client",
             "client_id", "visitor", "visitor_id", "member", "member_id", "account",
             "account_id", "listener", "viewer", "reader", "buyer", "person", "session",
             "session_id", "users"),
    "item": ("item_id", "itemid", "iid", "product", "product_id", "productid", "movie",
             "movie_id", "movieid", "song", "song_id", "track", "track_id", "article",
             "article_id", "book", "book_id", "sku", "video", "video_id", "artist", "poi",
             "venue", "venue_id", "business", "business_id", "asin", "document", "post",
             "items"),
    "timestamp": ("time", "ts", "date", "datetime", "unix_time", "utc_time", "unixtime",
                  "time_stamp", "event_time", "when", "created", "created_at", "epoch"),
    "rating": ("score", "stars", "ratings", "preference"),
}


class RoleProblem:
    """A role without a column: ``given`` is the name asked for (None: the role's own name
    was looked for), ``guess`` the column that probably holds it (None: no idea)."""

    def __init__(self, role: str, given: Any, guess: str | None, required: bool) -> None:
        self.role, self.given, self.guess, self.required = role, given, guess, required

    def text(self) -> str:
        if self.given is not None:
            return (f"no column {self.given!r} for the {self.role}"
                    + (f" (did you mean {self.guess!r}?)" if self.guess else ""))
        if not self.required:
            return f"{self.guess!r} looks like the {self.role} but is not named {self.role!r}"
        return (f"no column named {self.role!r}"
                + (f" ({self.guess!r} looks like it)" if self.guess else ""))


def _guess(role: str, given: Any, free: list[str], required: bool) -> str | None:
    name = role if given is None else str(given)
    guess = closest(name, free, cutoff=0.6 if required else 0.8)
    if guess is None and given is None:  # a name of the role, perhaps mistyped (itme_id)
        guess = next((c for a in ALIASES.get(role, ())
                      if (c := closest(a, free, cutoff=0.8)) is not None), None)
    return guess


def resolve_roles(names: Sequence[Any], columns: Mapping[str, Any] | None,
                  require_rating: bool) -> tuple[dict[str, Any], list[RoleProblem]]:
    """Map each role to one of ``names`` (absent optional roles are left out); the roles that
    could not be mapped come back as problems (empty: all is well)."""
    columns = dict(columns or {})
    present = set(names)
    out: dict[str, Any] = {}
    problems: list[RoleProblem] = []
    for role in ROLES:
        given = columns.get(role)
        if (role if given is None else given) in present:
            out[role] = role if given is None else given
    taken = {str(v) for v in out.values()}
    free = [str(c) for c in names if str(c) not in taken]
    for role in ROLES:
        if role in out:
            continue
        given = columns.get(role)
        required = role in ("user", "item") or given is not None \
            or (role == "rating" and require_rating)
        guess = _guess(role, given, free, required)
        if guess is not None and any(p.guess == guess for p in problems):
            guess = None  # one column cannot be suggested for two roles
        if required or guess is not None:
            problems.append(RoleProblem(role, given, guess, required))
    # a required role nothing names (an item in `mid`): the one column no role took or was
    # suggested for is the likely one
    left = [c for c in free if c not in {p.guess for p in problems}]
    unnamed = [p for p in problems if p.required and p.given is None and p.guess is None]
    if len(left) == 1 and unnamed:
        unnamed[0].guess = left[0]
    return out, problems


def roles_hint(found: Mapping[str, Any], problems: Sequence[RoleProblem],
               columns: Mapping[str, Any] | None) -> str:
    """How to name the missing roles, on the command line, in a ``[[datasets]]`` table and
    in Python (the table and Python forms give the whole mapping)."""
    fix = {p.role: p.guess or "<column>" for p in problems if p.required or p.guess}
    flags = " ".join(f"--column {role}={name}" for role, name in fix.items())
    given = {r: v for r, v in dict(columns or {}).items() if r in found}
    whole = {r: {**given, **fix}[r] for r in ROLES if r in given or r in fix}
    toml = ", ".join(f'{r} = "{v}"' for r, v in whole.items())
    ignored = [p.guess for p in problems if not p.required and p.guess]
    return (f"{flags} on the command line, options = {{columns = {{{toml}}}}} in a "
            f"[[datasets]] table, or columns={whole!r} in Python"
            + (f" (or rename/drop {', '.join(map(repr, ignored))} to leave "
               f"{'it' if len(ignored) == 1 else 'them'} out)" if ignored else ""))


# -------------------------------------------------------------------------------- header
_ISO = re.compile(r"^\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?(Z|[+-]\d\d:?\d\d)?$")
_WORD = re.compile(r"^[^\W\d][\w .()/-]*$")


def _kind(text: str) -> str:
    """``number``, ``datetime`` (ISO 8601), ``word`` (text without digits) or ``text``."""
    try:
        float(text)
        return "number"
    except ValueError:
        pass
    if _ISO.match(text):
        return "datetime"
    return "word" if _WORD.match(text) and not any(ch.isdigit() for ch in text) else "text"


#: A first line holding one of these is a header (``user``, ``item_id``, ``timestamp`` ...).
_HEADER_WORDS = frozenset({*ROLES, "user_id", "item_id", "userid", "itemid", "movieid",
                           "time", "score"})


def looks_like_header(first: Sequence[str], rest: Sequence[Sequence[str]]) -> bool:
    """Whether a first line of fields ``first`` names the columns of the lines ``rest``.

    Yes when one field is a role or an id column's name (``user``, ``item_id``, ``time``),
    when every field is a name of :data:`ALIASES` (``customer,product``); or when the fields
    are distinct, none recurs in its column below, and in at least one column the first field
    is not a number or an ISO 8601 time while every value below is (``ts`` above
    ``1700000000``, ``when`` above ``2024-05-01``), or the first field is a word without
    digits while every value below holds digits (``customer`` above ``u17``). A first line of
    data (``alice,apple`` above ``bob,pear``) stays data.
    """
    lower = [f.lower() for f in first]
    aliases = {a for names in ALIASES.values() for a in names}
    if any(f in _HEADER_WORDS for f in lower) or all(f in aliases for f in lower):
        return True
    if not rest or len(set(first)) < len(first) or not all(first):
        return False
    votes = 0
    for j, name in enumerate(first):
        below = [r[j] for r in rest if len(r) > j and r[j]]
        if name in below:
            return False
        kinds = {_kind(v) for v in below}
        if not below or _kind(name) in ("number", "datetime"):
            continue
        if kinds == {"number"} or kinds == {"datetime"} or (
                _kind(name) == "word" and all(any(c.isdigit() for c in v) for v in below)):
            votes += 1
    return votes > 0
