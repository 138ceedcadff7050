"""``python -m recaudit``: the ``recaudit`` command."""

if __name__ == "__main__":
    from recaudit.cli import _entry

    _entry()
