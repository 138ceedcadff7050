"""Jobs and their groups: what every executor schedules the same way.

A job is a tuple of small picklable arguments. With a ``group`` function, the first job of
each group runs first and the rest of the group waits for it (the audit groups trials by
baseline, so a baseline is trained once and read from the cache by the rest of its group).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Job", "split_groups"]

Job = tuple[Any, ...]


def split_groups(jobs: list[Job], group: Callable[[Job], Hashable] | None
                 ) -> tuple[list[Job], dict[Hashable, list[Job]]]:
    """``(first job of each group, the rest of each group by key)``, in job order."""
    if group is None:
        return jobs, {}
    first: list[Job] = []
    rest: dict[Hashable, list[Job]] = {}
    seen: set[Hashable] = set()
    for job in jobs:
        key = group(job)
        if key in seen:
            rest.setdefault(key, []).append(job)
        else:
            seen.add(key)
            first.append(job)
    return first, rest
