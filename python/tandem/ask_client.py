"""``tandem ask`` through a running backend, as ``emacsclient`` talks to Emacs.

A running ``tandem serve`` listens on a private socket of its state root
(`socket_paths`: a 0700 folder of this user under the runtime directory, the
socket and a 0600 token file beside it). ``tandem ask`` tries it first: it
sends the token and its arguments as one JSON line, and writes what comes back
(``out`` to stdout, ``err`` to stderr) as the in-process run would have
written it; a permission question (``ask``) is put to this terminal and
answered on the socket; ``exit`` ends it with its status. With no backend (no
socket, no token, a refusal, ``TANDEM_ASK_LOCAL`` set), the turn runs in this
process (`tandem.ask`, which the command imports only then).

The turn then runs with the backend's settings, keys and journals: a session
Emacs shows gets the turn live. Only the standard library (and `tandem.paths`) is imported here,
so a turn sent to a running backend costs a small process (start-up).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any, Literal

from tandem.paths import tandem_home

PROTOCOL = 1
"""Version of the socket's JSON lines; a backend of another version is not used."""

MAX_LINE = 1 << 20
"""Longest JSON line either side accepts (the socket is untrusted before the token)."""


def runtime_dir() -> Path:
    """This user's private folder of backend sockets (not created here).

    ``$XDG_RUNTIME_DIR/tandem`` (a per-user tmpfs), else ``/tmp/tandem-UID``
    as Emacs's own server folder is.
    """
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base):
        return Path(base) / "tandem"
    return Path("/tmp") / f"tandem-{os.getuid()}"


def socket_paths(home: Path) -> tuple[Path, Path]:
    """(socket, token file) of the backend serving state root HOME."""
    tag = hashlib.sha256(os.fsencode(os.path.abspath(home))).hexdigest()[:16]
    folder = runtime_dir()
    return folder / f"ask-{tag}.sock", folder / f"ask-{tag}.token"


def private_folder_ok(folder: Path) -> bool:
    """Whether FOLDER is a real folder of ours that no one else may enter (0700)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and stat.S_IMODE(st.st_mode) & 0o077 == 0)


def read_token(path: Path) -> str | None:
    """The token in PATH, when it is a regular file of ours readable by us alone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()
                or stat.S_IMODE(st.st_mode) & 0o077):
            return None
        token = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return token or None


def _terminal() -> tuple[io.FileIO, io.FileIO] | None:
    """Open the controlling terminal as (reader, writer), or None when there is none.

    Two unbuffered byte streams: a text stream opened ``r+`` on ``/dev/tty``
    fails ("not seekable"), which read as "no terminal" and rejected every call.
    """
    try:
        reader = open("/dev/tty", "rb", buffering=0)  # noqa: SIM115 - closed by caller
    except OSError:
        return None
    try:
        writer = open("/dev/tty", "wb", buffering=0)  # noqa: SIM115 - closed by caller
    except OSError:
        reader.close()
        return None
    return reader, writer


def may_ask() -> bool:
    """Whether a permission question may go to the terminal (stdin is one, or forced)."""
    return sys.stdin.isatty() or bool(os.environ.get("TANDEM_FORCE_TTY"))


Answer = Literal["allow_once", "allow_session", "reject"]


def choice(line: bytes) -> Answer:
    """The answer a typed LINE means; empty (or anything else) is the default, no."""
    typed = line.decode("utf-8", "replace").strip().lower()[:1]
    return "allow_once" if typed == "y" else "allow_session" if typed == "a" else "reject"


def prompt(tool: str, title: str, once_only: bool) -> Answer | None:
    """Ask on the terminal whether TOOL may run; the answer, None with no terminal."""
    tty = _terminal() if may_ask() else None
    if tty is None:
        return None
    reader, writer = tty
    with reader, writer:
        always = "" if once_only else " / [a]lways this session"
        writer.write(f"Allow {tool}: {title}? [y]es once{always} / [N]o: ".encode())
        line = reader.readline()
    return choice(line)


def request_of(args: argparse.Namespace) -> dict[str, object]:
    """The ``ask`` request of the parsed ARGS (the cwd made absolute here)."""
    return {"prompt": args.prompt, "cwd": os.path.abspath(args.cwd or os.getcwd()),
            "session": args.session, "provider": args.provider,
            "permission_mode": args.permission_mode, "json": bool(args.json),
            "tty": may_ask()}


def _lines(sock: socket.socket) -> Any:
    """The JSON objects the backend sends, one a line."""
    buf = b""
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line, buf = buf[:end], buf[end + 1:]
            yield json.loads(line)
            continue
        if len(buf) > MAX_LINE:
            raise ValueError("line too long")
        chunk = sock.recv(1 << 16)
        if not chunk:
            return
        buf += chunk


def through_backend(args: argparse.Namespace) -> int | None:
    """Run the turn in the running backend; its exit status, None when there is none.

    None means nothing was run there (no backend, not ours, it refused before
    the turn): the caller runs it in-process. Once the backend took the turn,
    a lost connection is a failure (status 1), never a second run.
    """
    if os.environ.get("TANDEM_ASK_LOCAL"):
        return None
    path, token_path = socket_paths(tandem_home())
    if not private_folder_ok(path.parent):
        return None
    token = read_token(token_path)
    if token is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.connect(str(path))
        except OSError:
            return None
        hello = {"protocol": PROTOCOL, "token": token, "ask": request_of(args)}
        sock.sendall(json.dumps(hello).encode() + b"\n")
        return _follow(sock)
    except KeyboardInterrupt:
        return 130  # closing the socket cancels the turn in the backend
    finally:
        sock.close()


def _follow(sock: socket.socket) -> int | None:
    taken = False
    try:
        for msg in _lines(sock):
            if not isinstance(msg, dict):
                continue
            if "accepted" in msg:
                taken = True
            elif "out" in msg:
                sys.stdout.write(str(msg["out"]))
                sys.stdout.flush()
            elif "err" in msg:
                sys.stderr.write(str(msg["err"]))
                sys.stderr.flush()
            elif "ask" in msg:
                q = msg["ask"]
                answer = prompt(str(q.get("tool")), str(q.get("title")),
                                bool(q.get("once_only")))
                sock.sendall(json.dumps({"answer": answer}).encode() + b"\n")
            elif "exit" in msg:
                return int(msg["exit"])
            elif "refused" in msg and not taken:
                return None
    except (OSError, ValueError):
        pass
    if not taken:
        return None
    sys.stderr.write("\ntandem: the backend went away during the turn\n")
    return 1
