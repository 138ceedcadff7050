"""A job that reports what its pool worker imported before it (``test_worker_imports.py``);
it imports nothing itself, so the worker holds only what the pool's start imported."""

import sys


def modules(_):
    return sorted(sys.modules)
