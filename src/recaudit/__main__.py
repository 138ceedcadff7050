"""``python -m recaudit``: the ``recaudit`` command (the console script's entry point)."""

if __name__ == "__main__":
    from recaudit.cli import _entry

    _entry()
