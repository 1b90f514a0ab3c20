"""``tandem trust [DIR]`` and ``tandem untrust [DIR]``: the project settings trust store."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from tandem.paths import tandem_home

# The error class without pydantic: building the parser must stay light.
from tandem.protocol.errors import TandemError


def _home() -> Path:
    return tandem_home()


def _trust(args: argparse.Namespace) -> int:
    from tandem.config.grants import describe, grant_trust, trust_report

    root = os.path.abspath(args.dir or os.getcwd())
    if args.show:
        report = trust_report(root, _home())
        print(describe(report, whole=True))
        return 0 if report.exists and not report.error else 1
    try:
        report = grant_trust(root, _home(), args.sha256)
    except TandemError as e:
        sys.stderr.write(f"tandem: {e.message}\n")
        return 1
    print(describe(report))
    return 0


def _untrust(args: argparse.Namespace) -> int:
    from tandem.config.grants import revoke_trust
    from tandem.config.trust import canonical_root

    root = canonical_root(os.path.abspath(args.dir or os.getcwd()))
    try:
        had = revoke_trust(root, _home())
    except TandemError as e:
        sys.stderr.write(f"tandem: {e.message}\n")
        return 1
    print(f"{root}: {'no longer trusted' if had else 'was not trusted'}")
    return 0


def _hex(text: str) -> str:
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise argparse.ArgumentTypeError("expected the 64 hex digits --show printed")
    return text


def register(sub: Any) -> None:
    """Add ``tandem trust`` and ``tandem untrust`` to the command line."""
    p = sub.add_parser("trust", help="let DIR's .tandem/settings.json set URLs, agents, modes, "
                       "and its agents read their own configuration there")
    p.add_argument("dir", nargs="?", help="project root (default: here)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--show", action="store_true",
                     help="print the files whole, the restricted values and the digest; "
                          "trust nothing")
    how.add_argument("--sha256", metavar="HEX", type=_hex,
                     help="trust only if the files still have this digest (from --show)")
    p.set_defaults(func=_trust)
    p = sub.add_parser("untrust", help="revoke the trust of DIR's project settings")
    p.add_argument("dir", nargs="?", help="project root (default: here)")
    p.set_defaults(func=_untrust)
