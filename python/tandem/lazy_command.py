"""A sub-command's handler named by module and function, imported when it runs.

``tandem --help`` and ``tandem ask`` build the whole argument parser; with
handlers imported only when their sub-command runs, building it loads
argparse and nothing of the domain (start-up).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]


def lazy(module: str, name: str) -> Handler:
    """A handler that imports MODULE and calls its NAME with the parsed arguments."""

    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(module), name)(args) or 0)

    run.__qualname__ = run.__name__ = f"lazy:{module}.{name}"
    run.target = (module, name)  # type: ignore[attr-defined]  # read by the parser's test
    return run
