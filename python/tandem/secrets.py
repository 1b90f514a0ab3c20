"""The process's secrets (API keys, the backend token), held in memory only.

An approved shell command can read ``/proc/$PPID/environ``, and that file
shows the process's *initial* environment whatever ``unsetenv`` did later. So
a secret must never be in a tandem process's initial environment:

* Emacs starts ``tandem serve`` without them and writes one JSON line on its
  stdin, ``{"token": …, "secrets": {NAME: VALUE}}`` (`read_handover`).
* A ``tandem`` command started from a shell that exports keys re-executes
  itself once, first thing, with the secrets removed from its environment and
  passed over an inherited pipe (`bootstrap`).

Code that needs a key asks `get` or `lookup_env`; a process tandem starts
gets `child_env`, which holds none.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from types import MappingProxyType

SECRET_SUFFIXES = (
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PASSWORD",
)
"""A variable whose name ends so (any case) is a secret: never inherited by a child."""
HANDOFF_FD_VAR = "TANDEM_SECRETS_FD"
"""Names the inherited pipe a re-executed process reads its secrets from."""
TOKEN = "TANDEM_TOKEN"
"""The name under which the backend's authentication token is kept."""
HANDOVER_LIMIT = 1 << 20
"""Largest hand-over line accepted on stdin (bytes)."""

_store: dict[str, str] = {}


def is_secret_name(name: str) -> bool:
    """Whether the environment variable NAME holds a secret."""
    return name.upper().endswith(SECRET_SUFFIXES)


def get(name: str) -> str | None:
    """The secret NAME, or None."""
    return _store.get(name)


def put(name: str, value: str) -> None:
    """Keep VALUE as the secret NAME (in this process's memory only)."""
    _store[name] = value


def secrets() -> Mapping[str, str]:
    """A read-only view of every secret held."""
    return MappingProxyType(_store)


def lookup_env() -> Mapping[str, str]:
    """The secrets over ``os.environ``: what code that read keys from the
    environment reads now (in-process callers that set ``os.environ`` still work)."""
    return ChainMap(_store, os.environ)


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """BASE (default ``os.environ``) without any secret, for a process tandem starts."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if not is_secret_name(k) and k != HANDOFF_FD_VAR}


def capture(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Move every secret of ENVIRON (default ``os.environ``) into memory; return them.

    This keeps children clean, but ``/proc/PID/environ`` still shows the
    initial environment: use `bootstrap` to be rid of that too.
    """
    env = os.environ if environ is None else environ
    found = {k: v for k, v in env.items() if is_secret_name(k)}
    for name in found:
        del env[name]
    _store.update(found)
    return found


def _receive(fd_text: str) -> None:
    fd = int(fd_text)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = json.loads(b"".join(chunks) or b"{}")
    _store.update({str(k): str(v) for k, v in dict(data).items()})


def _pipe_with(payload: bytes) -> int:
    """A pipe holding PAYLOAD; returns its inheritable read end."""
    read_end, write_end = os.pipe()
    try:
        if len(payload) >= 65536:
            import fcntl

            # Written before exec, so it must fit in the pipe at once.
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, len(payload) + 4096)
        view = memoryview(payload)
        while view:
            view = view[os.write(write_end, view) :]
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


def bootstrap() -> None:
    """Make sure no secret is in this process's initial environment, or its children's.

    Call it first thing in a ``tandem`` command. In a process started with
    secrets in its environment it re-executes the same command line with them
    removed and handed over on a pipe; the new process reads them back here.
    When ``exec`` is impossible they are at least moved out of ``os.environ``.
    """
    fd_text = os.environ.pop(HANDOFF_FD_VAR, None)
    if fd_text:
        _receive(fd_text)
    found = {k: v for k, v in os.environ.items() if is_secret_name(k)}
    if fd_text or not found:
        capture()  # nothing should be left; stay safe if something is
        return
    try:
        read_end = _pipe_with(json.dumps(found).encode())
    except OSError:
        capture()
        return
    env = child_env()
    env[HANDOFF_FD_VAR] = str(read_end)
    argv = [sys.executable, *sys.orig_argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, argv, env)
    except OSError:
        os.close(read_end)
        capture()


def read_handover(fd: int = 0, timeout: float = 30.0) -> bool:
    """Read the hand-over line Emacs writes on FD; keep its token and secrets.

    Returns False when FD ends or TIMEOUT passes without a line. Reads byte
    by byte up to the newline so nothing after it is consumed.
    """
    deadline = time.monotonic() + timeout
    line = bytearray()
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or len(line) > HANDOVER_LIMIT:
            return False
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return False
        byte = os.read(fd, 1)
        if not byte:
            return False
        line += byte
    return accept_handover(bytes(line))


def accept_handover(line: bytes) -> bool:
    """Keep the token and secrets of hand-over LINE; False when it is not one."""
    try:
        data = json.loads(line)
    except ValueError:
        return False
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return False
    given = data.get("secrets")
    given = {} if given is None else given
    if not isinstance(given, dict):
        return False
    _store.update({str(k): str(v) for k, v in given.items() if isinstance(v, str)})
    _store[TOKEN] = data["token"]
    return True
