"""Fail ``make test`` when the run changed the real user's tandem state or config.

``python tests/home_guard.py snapshot FILE`` records every path under the
user's tandem directories with its type, size and mtime; ``python
tests/home_guard.py check FILE`` compares them with the record and exits 1,
naming each path that appeared, went or changed. The directories are read
from the environment ``make`` itself got (the user's), never from a test's:

* ``$TANDEM_HOME``, else ``${XDG_STATE_HOME:-~/.local/state}/tandem``, and that
  default too when ``TANDEM_HOME`` names another directory;
* ``${XDG_CONFIG_HOME:-~/.config}/tandem`` and
  ``${XDG_DATA_HOME:-~/.local/share}/tandem``;
* in ``~/.emacs.d`` and ``${XDG_CONFIG_HOME:-~/.config}/emacs``, every path
  whose name has ``tandem`` in it (the package, its autoloads, native code).

The standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

WALK_LIMIT = 200_000
"""Most entries one root's snapshot records (the rest is named as cut)."""


def _env_dir(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or os.path.join(os.path.expanduser("~"), default))


def roots() -> dict[str, tuple[Path, bool]]:
    """Each watched directory, by label, with whether only tandem-named paths count."""
    state = _env_dir("XDG_STATE_HOME", ".local/state") / "tandem"
    config = _env_dir("XDG_CONFIG_HOME", ".config")
    out = {
        "default TANDEM_HOME": (state, False),
        "user config": (config / "tandem", False),
        "user data": (_env_dir("XDG_DATA_HOME", ".local/share") / "tandem", False),
        "~/.emacs.d": (Path(os.path.expanduser("~/.emacs.d")), True),
        "emacs config": (config / "emacs", True),
    }
    explicit = os.environ.get("TANDEM_HOME")
    if explicit:
        out["TANDEM_HOME"] = (Path(explicit).expanduser(), False)
    return out


def _record(st: os.stat_result) -> list[object]:
    kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
    # A folder's size and mtime change with what is in it; its entries say that.
    return [kind, 0, 0] if kind == "d" else [kind, st.st_size, st.st_mtime_ns]


def snapshot_root(root: Path, tandem_only: bool) -> dict[str, list[object]]:
    """Relative path → [kind, size, mtime_ns] of ROOT and what lies below it."""
    out: dict[str, list[object]] = {}
    try:
        top = os.lstat(root)
    except OSError:
        return out
    if not tandem_only:
        out["."] = _record(top)
    stack = [root] if stat.S_ISDIR(top.st_mode) else []
    while stack and len(out) < WALK_LIMIT:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            rel = os.path.relpath(entry.path, root)
            if not tandem_only or "tandem" in rel.lower():
                out[rel] = _record(st)
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(entry.path))
    if stack:
        out["(cut)"] = ["cut", len(out), 0]
    return out


def snapshot() -> dict[str, dict[str, list[object]]]:
    """Every watched root's snapshot, keyed by its path."""
    return {str(path): snapshot_root(path, only) for path, only in roots().values()}


def differences(before: dict[str, dict[str, list[object]]],
                after: dict[str, dict[str, list[object]]]) -> list[str]:
    """One line per path that appeared, went or changed between BEFORE and AFTER."""
    lines = []
    for root in sorted(set(before) | set(after)):
        old, new = before.get(root, {}), after.get(root, {})
        for rel in sorted(set(old) | set(new)):
            path = os.path.normpath(os.path.join(root, rel))
            if rel not in old:
                lines.append(f"appeared: {path}")
            elif rel not in new:
                lines.append(f"went: {path}")
            elif old[rel] != new[rel]:
                lines.append(f"changed: {path}")
    return lines


def main(argv: list[str]) -> int:
    """``snapshot FILE`` or ``check FILE``; exit status 1 when something changed."""
    if len(argv) != 2 or argv[0] not in ("snapshot", "check"):
        print("usage: home_guard.py snapshot|check FILE", file=sys.stderr)
        return 2
    command, file = argv
    if command == "snapshot":
        Path(file).parent.mkdir(parents=True, exist_ok=True)
        Path(file).write_text(json.dumps(snapshot()), encoding="utf-8")
        return 0
    try:
        before = json.loads(Path(file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"home guard: no usable snapshot in {file} ({e})", file=sys.stderr)
        return 2
    changed = differences(before, snapshot())
    if not changed:
        print("home guard: the user's tandem state and config are as before the tests")
        return 0
    print("home guard: the tests changed the real user's tandem state or config:",
          file=sys.stderr)
    for line in changed[:50]:
        print(f"  {line}", file=sys.stderr)
    if len(changed) > 50:
        print(f"  and {len(changed) - 50} more", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
