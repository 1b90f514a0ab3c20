"""Remote path rules: what is absolute on the agent-server, joins, upload names.

These are pure functions on strings. The agent-server may run on POSIX or on
Windows, so nothing here consults the local ``os.path``: a remote path is
classified by its own shape (docs/remote.md).

The only sanctioned way to make a relative remote path absolute is to join it
onto the host's home (see ``resolver.py``); nothing here or elsewhere in this
package builds a remote path by putting a separator in front of it.
"""

from __future__ import annotations

import re

from tandem.protocol.base import TandemError
from tandem.protocol.remote import DRIVE as _DRIVE
from tandem.protocol.remote import UNC as _UNC
from tandem.protocol.remote import is_absolute

_DRIVE_RELATIVE = re.compile(r"^[A-Za-z]:(?![\\/])")
"""``C:`` or ``C:x``: relative to the drive's current directory, never meant here."""
_WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\/]+[\\/][^\\/]+[\\/]?)$")
_SEPARATORS = re.compile(r"[\\/]")


def _check_text(path: str, what: str) -> None:
    """Refuse NUL and other control characters: no server path contains them."""
    if any(ord(c) < 32 for c in path):
        raise TandemError("invalid", f"{what} contains a control character: {path!r}")


def separator_of(path: str) -> str:
    """The separator to extend absolute PATH with: ``\\`` for Windows paths, else ``/``.

    A drive path written with forward slashes (``C:/x``) keeps forward slashes.
    """
    if _UNC.match(path) or (_DRIVE.match(path) and "\\" in path):
        return "\\"
    return "/"


def strip_trailing_separators(path: str) -> str:
    """PATH without trailing separators, except where the path is a root itself.

    ``/home/u/`` → ``/home/u``; ``/`` stays ``/``; ``C:\\`` stays ``C:\\``.
    """
    if _WINDOWS_ROOT.match(path):
        return path
    stripped = path.rstrip("/\\")
    return stripped or path[:1]


def normalize_home(home: str) -> str:
    """Validate the home directory a server reported and strip its trailing separators."""
    if not isinstance(home, str) or not home.strip():
        raise TandemError("remote-invalid", "the server reported an empty home directory")
    _check_text(home, "the server's home directory")
    if not is_absolute(home):
        raise TandemError(
            "remote-invalid", f"the server reported a home that is not absolute: {home!r}"
        )
    return strip_trailing_separators(home)


def relative_parts(path: str) -> list[str]:
    """Split relative PATH into its components, refusing ones that leave the anchor.

    ``/`` and ``\\`` both separate; empty and ``.`` components are dropped;
    ``..`` is refused, as are ``~`` (the server would make a folder named ``~``)
    and drive-relative forms such as ``C:x``.
    """
    _check_text(path, "working dir")
    if is_absolute(path):
        raise TandemError("invalid", f"not a relative path: {path!r}")
    if _DRIVE_RELATIVE.match(path):
        raise TandemError("invalid", f"drive-relative paths are ambiguous: {path!r}")
    parts = [p for p in _SEPARATORS.split(path) if p not in ("", ".")]
    if ".." in parts:
        raise TandemError("invalid", f"'..' may not appear in a working dir: {path!r}")
    if parts and parts[0] == "~":
        raise TandemError("invalid", f"write {path!r} relative to the home instead of with '~'")
    return parts


def join_under(base: str, parts: list[str]) -> str:
    """Join PARTS onto absolute BASE with BASE's own separator style."""
    if not is_absolute(base):
        raise TandemError("invalid", f"not an absolute remote path: {base!r}")
    base = strip_trailing_separators(base)
    if not parts:
        return base
    sep = separator_of(base)
    tail = sep.join(parts)
    # A root (``/``, ``C:\``) already ends with its separator.
    return base + tail if base.endswith(("/", "\\")) else base + sep + tail


def upload_name(file_name: str) -> str:
    """The basename of FILE_NAME as an upload destination name.

    Only the last component counts (either separator); ``.``, ``..`` and empty
    names are refused.
    """
    if not isinstance(file_name, str):
        raise TandemError("invalid", f"file name must be a string, not {type(file_name)}")
    _check_text(file_name, "file name")
    name = _SEPARATORS.split(file_name)[-1]
    if name in ("", ".", ".."):
        raise TandemError("invalid", f"not an uploadable file name: {file_name!r}")
    return name


def build_upload_path(file_name: str, working_dir: str) -> str:
    """The server path a file named FILE_NAME uploads to inside WORKING_DIR.

    WORKING_DIR must already be resolved (absolute); only FILE_NAME's basename
    is used, so the result is always a direct child of WORKING_DIR.
    """
    if not isinstance(working_dir, str) or not working_dir:
        raise TandemError("invalid", "the working dir is empty; resolve it first")
    _check_text(working_dir, "working dir")
    if not is_absolute(working_dir):
        raise TandemError(
            "invalid", f"the working dir must be resolved to an absolute path: {working_dir!r}"
        )
    return join_under(working_dir, [upload_name(file_name)])
