"""The code blocks of a documentation page, as the example tests run them.

Conventions (stated in ``docs/contributing-docs`` terms, enforced here):

- a ```` ```python ```` block runs, in page order, in one namespace per page;
- a ```` ```console ```` block runs each line that starts with ``$ `` (a trailing ``\\`` joins
  the next line); lines without ``$`` show output and are not compared;
- a ```` ```{code-block} LANG ```` block with ``:caption: NAME`` (a file name) writes its text to
  ``NAME`` in the page's working folder before the blocks after it run;
- every other block (``text``, ``toml``, ``bash``, ``shell``, ...) is shown, not run — but
  checked: a ``recaudit ...`` line of a ``bash``/``shell``/``sh`` block must parse (its
  command and options exist, values have their types), a ``toml`` block must be a valid
  configuration of one of the studies (:func:`shown`);
- ``<!-- test: slow -->`` on a page marks its test slow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)\s*$",
                    re.M | re.S)
_FILE = re.compile(r"^[\w.\-/]+\.[A-Za-z0-9]+$")


_SHOWN = {"bash", "shell", "sh", "toml"}


@dataclass(frozen=True)
class Block:
    kind: str  # "python", "console", "file"
    text: str
    line: int
    name: str = ""  # the file a "file" block writes


def shown(path: Path) -> list[Block]:
    """The blocks of ``path`` that are shown, not run, but checked: ``toml`` blocks and the
    ``recaudit`` command lines of shell blocks (kind ``"toml"`` or ``"command"``)."""
    source = path.read_text()
    out = []
    for m in _FENCE.finditer(source):
        info, body = m.group("info").strip(), m.group("body")
        line = source.count("\n", 0, m.start()) + 1
        if info not in _SHOWN:
            continue
        if info == "toml":
            out.append(Block("toml", body, line))
            continue
        joined = body.replace("\\\n", " ")
        for cmd in joined.splitlines():
            cmd = cmd.split(" #", 1)[0].strip()
            if cmd.startswith("recaudit "):
                out.append(Block("command", cmd, line))
    return out


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of the Markdown page at ``path``, in order."""
    source = path.read_text()
    out = []
    for m in _FENCE.finditer(source):
        info, body = m.group("info").strip(), m.group("body")
        line = source.count("\n", 0, m.start()) + 1
        if info == "python":
            out.append(Block("python", body, line))
        elif info == "console":
            out.append(Block("console", body, line))
        elif info.startswith("{code-block}"):
            options = {}
            rest = body.splitlines(keepends=True)
            while rest and rest[0].startswith(":"):
                key, _, value = rest.pop(0)[1:].partition(":")
                options[key.strip()] = value.strip()
            if rest and not rest[0].strip():
                rest.pop(0)
            caption = options.get("caption", "")
            if _FILE.match(caption):
                out.append(Block("file", "".join(rest), line, caption))
            elif info.split()[1:2] == ["python"]:
                out.append(Block("python", "".join(rest), line))
    return out


def commands(text: str) -> list[str]:
    """The ``$ `` lines of a console block, continuation lines joined."""
    out, current = [], None
    for raw in text.splitlines():
        if current is not None:
            current += " " + raw.strip().rstrip("\\").strip()
            if not raw.rstrip().endswith("\\"):
                out.append(current)
                current = None
            continue
        if raw.startswith("$ "):
            cmd = raw[2:].strip()
            if cmd.endswith("\\"):
                current = cmd.rstrip("\\").strip()
            else:
                out.append(cmd)
    if current is not None:
        out.append(current)
    return out


def is_slow(path: Path) -> bool:
    return "<!-- test: slow -->" in path.read_text()
