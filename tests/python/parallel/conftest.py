"""Fixtures of the parallel-session tests: the rewind tests' App (one copy)."""

from rewind.conftest import app

__all__ = ["app"]
