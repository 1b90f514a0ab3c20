"""Every place the backend creates a file or folder goes through `tandem.store.fsutil`.

The scan reads the backend's sources with `ast` and names each call that
creates something with the process umask's modes: ``open`` for writing,
``Path.mkdir`` / ``touch`` / ``write_text`` / ``write_bytes``, ``os.mkdir`` /
``os.makedirs``, ``shutil`` copies, and ``os.open`` with ``O_CREAT`` whose
mode is not a private constant. tandem's own state must use the private
helpers instead; the few calls that write into the *user's project* (whose
files keep the user's modes) are listed with their reason. A listed call
that no longer occurs fails too, so the list stays true.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "python" / "tandem"

ALLOWED: dict[tuple[str, str], str] = {
    ("store/fsutil.py", "os.open"): "the private helpers themselves",
    ("store/fsutil.py", "shutil.copytree"): "a move across file systems keeps the source's modes",
    ("store/fsutil.py", "shutil.copy2"): "a move across file systems keeps the source's modes",
    ("tools/edit.py", "mkdir"): "the write tool creates folders in the user's project",
    ("tools/edit.py", "os.open"): "the write tool keeps the mode of the user's file",
    ("checkpoints/restore.py", "mkdir"): "a restore recreates the project's own folders",
    ("checkpoints/restore.py", "os.open"): "a restore sets the project file's recorded mode",
    ("sessions/settings.py", "mkdir"): "a project's .tandem folder is the user's",
    ("remote/unpack.py", "os.mkdir"): "a mirrored folder, 0700",
    ("remote/mirror.py", "os.open"): "a mirrored file keeps the server file's mode, in the "
                                     "mirror's private folder (as unpack.py)",
    ("remote/mirror.py", "shutil.copyfile"): "a renamed file copied within the private mirror",
    ("ask_client.py", "open"): "the terminal (/dev/tty) is opened, not created",
    ("faults.py", "open"): "the test-only fault log TANDEM_FAULTS_LOG names (never set in use)",
    ("server/ask_socket.py", "mkdir"): "the socket's folder, mode 0700 given",
    ("server/ask_socket.py", "os.open"): "the token file, 0600 with O_EXCL|O_NOFOLLOW",
    ("parallel/bestof.py", "mkdir"): "TANDEM_HOME's parallel folders, mode 0700 given",
    ("parallel/records.py", "mkdir"): "TANDEM_HOME's parallel folder, mode 0700 given",
    ("parallel/landing.py", "mkdir"): "a landing creates the project's own folders",
    ("parallel/landing.py", "write_bytes"): "merge inputs in a mkdtemp scratch folder (0700)",
    ("parallel/trees.py", "mkdir"): "a parallel tree is the user's working tree, as the project",
    ("parallel/trees.py", "os.open"): "a parallel tree's files get their committed modes",
    ("parallel/trees.py", "shutil.copy2"): "a copied tree keeps the project files' modes",
    ("parallel/trees.py", "shutil.copyfile"): "the checkout's index, chmod 0600 at once",
}
"""(module, call) → why it may create with a mode of its own."""

_PRIVATE_NAMES = {"PRIVATE_FILE_MODE", "PRIVATE_DIR_MODE"}
_PATH_METHODS = {"mkdir", "touch", "write_text", "write_bytes"}
_OS_CREATORS = {"mkdir", "makedirs"}
_SHUTIL = {"copy", "copy2", "copyfile", "copytree"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name | ast.Attribute)
               and (getattr(n, "id", None) in names or getattr(n, "attr", None) in names)
               for n in ast.walk(node))


def _writes(call: ast.Call) -> bool:
    """``open(path, MODE)`` with a mode that creates or writes."""
    mode = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
            and any(c in mode.value for c in "wax+"))


def creators(source: str) -> list[tuple[str, int]]:
    """(call, line) of each call in SOURCE that creates a file or folder unprivately."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name == "open" and _writes(node):
            found.append(("open", node.lineno))
        elif isinstance(node.func, ast.Attribute) and name.startswith("os."):
            if node.func.attr in _OS_CREATORS and not _mentions(node, _PRIVATE_NAMES):
                found.append((name, node.lineno))
            elif node.func.attr == "open" and _mentions(node, {"O_CREAT"}) and not _mentions(
                    node, _PRIVATE_NAMES):
                found.append(("os.open", node.lineno))
        elif isinstance(node.func, ast.Attribute) and name.startswith("shutil."):
            if node.func.attr in _SHUTIL:
                found.append((name, node.lineno))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_METHODS:
            found.append((node.func.attr, node.lineno))
    return found


def test_every_creation_in_the_backend_is_private_or_listed() -> None:
    unlisted, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = str(path.relative_to(PACKAGE))
        for call, line in creators(path.read_text(encoding="utf-8")):
            if (module, call) in ALLOWED:
                used.add((module, call))
            else:
                unlisted.append(f"{module}:{line}: {call}")
    assert unlisted == [], ("create through tandem.store.fsutil (private_dir, atomic_write, "
                            "open_private, create_private, touch_private), or list the call "
                            "with why: " + "; ".join(unlisted))
    assert set(ALLOWED) - used == set(), "listed but gone: " + repr(set(ALLOWED) - used)


def test_the_scan_sees_each_kind_of_creation() -> None:
    source = "\n".join([
        "open(p, 'w')", "open(p, mode='ab')", "p.mkdir()", "p.touch()", "p.write_text('x')",
        "os.makedirs(p)", "shutil.copy2(a, b)", "os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)",
        # not creations, or private ones:
        "open(p)", "open(p, 'rb')", "os.open(p, os.O_RDONLY)",
        "os.open(p, os.O_CREAT, fsutil.PRIVATE_FILE_MODE)", "os.mkdir(p, PRIVATE_DIR_MODE)"])
    assert [c for c, _ in creators(source)] == [
        "open", "open", "mkdir", "touch", "write_text", "os.makedirs", "shutil.copy2",
        "os.open"]
