"""``python -m recaudit``: the ``recaudit`` command (the console script's entry point)."""

from recaudit.cli import _entry

if __name__ == "__main__":
    _entry()
