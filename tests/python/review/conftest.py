"""Fixtures of the review tests: the rewind tests' git project and App (one copy)."""

from rewind.conftest import app, project

__all__ = ["app", "project"]
