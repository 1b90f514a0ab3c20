"""The remote domain's per-process state and operations, used by ``api.py``.

One ``RemoteService`` per backend holds the home cache, so every caller in
the process shares it. Clients are made per operation: the session API key
comes with each call (from Emacs auth-source or the environment) and is
dropped when the operation ends.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from pydantic import SecretStr

from tandem.protocol.base import TandemError
from tandem.protocol.remote import ConversationCreated, LlmSettings, RemoteTarget, UploadResult
from tandem.remote.client import AgentServerClient, Progress, normalize_base_url
from tandem.remote.errors import RemoteError, naming_host
from tandem.remote.home_cache import HomeCache
from tandem.remote.paths import build_upload_path, upload_name
from tandem.remote.resolver import WorkingDirResolver
from tandem.remote.target_file import targets_dir
from tandem.remote.targets import load_target, remove_target, save_target

Key = SecretStr | str | None
"""A session API key as it comes: wrapped, plain, or absent."""


class Probe(TypedDict):
    """One host as probed: its home, or the error that kept us from it."""

    name: str
    url: str
    home: str | None
    error: str | None


class RemoteService:
    """Remote operations over a shared per-host home cache; HOME is the state root."""

    def __init__(self, home: Path,
                 key_lookup: Callable[[RemoteTarget], SecretStr | None] | None = None) -> None:
        self.home = home
        self.cache = HomeCache()
        self._keys: dict[str, SecretStr] = {}
        """Session API keys by session, in memory only (given with attach)."""
        self.key_lookup: Callable[[RemoteTarget], SecretStr | None] = (
            key_lookup or (lambda _target: None))
        """The key of a target's host from the front end's configuration (the app's),
        used when no attach in this process gave one."""

    def client(self, url: str, api_key: Key) -> AgentServerClient:
        """A client of the server at URL (close it, or use ``async with``)."""
        return AgentServerClient(url, api_key)

    async def resolve(self, url: str, api_key: Key, working_dir: str | None) -> str:
        """WORKING_DIR resolved on the server at URL."""
        async with self.client(url, api_key) as c:
            return await WorkingDirResolver(c, self.cache).resolve(working_dir)

    async def home_of(self, url: str, api_key: Key) -> str:
        """The (cached) home of the server at URL."""
        async with self.client(url, api_key) as c:
            return await WorkingDirResolver(c, self.cache).home()

    async def upload(
        self,
        url: str,
        api_key: Key,
        working_dir: str | None,
        files: list[Path],
        progress: Progress | None = None,
    ) -> tuple[str, list[UploadResult]]:
        """Upload FILES into WORKING_DIR (resolved) on URL; return it and the results.

        Every file is tried; if any fails, one RemoteError names each failed
        file with the server's message and carries the successes in its data.
        """
        if not files:
            raise TandemError("invalid", "no files to upload")
        names: dict[str, Path] = {}
        for f in files:
            name = upload_name(str(f))
            if name in names:
                raise TandemError("invalid", f"{f} and {names[name]} would both upload as {name!r}")
            names[name] = f
        async with self.client(url, api_key) as c:
            resolved = await WorkingDirResolver(c, self.cache).resolve(working_dir)
            done: list[UploadResult] = []
            failed: list[tuple[Path, TandemError]] = []
            for f in files:
                try:
                    dest = build_upload_path(str(f), resolved)
                    done.append(await c.upload(f, dest, progress))
                except TandemError as e:
                    failed.append((f, e))
        if failed:
            first = failed[0][1]
            message = "; ".join(e.message for _, e in failed)
            status = first.status if isinstance(first, RemoteError) else None
            err = RemoteError(first.code, message, status)
            err.data = {
                "status": status,
                "failed": [str(f) for f, _ in failed],
                "uploaded": [r.model_dump() for r in done],
            }
            raise err
        return resolved, done

    async def create_conversation(
        self,
        url: str,
        api_key: Key,
        working_dir: str | None,
        llm: LlmSettings,
        initial_message: str | None = None,
    ) -> ConversationCreated:
        """Start a conversation on URL in WORKING_DIR, resolved like uploads are."""
        async with self.client(url, api_key) as c:
            resolved = await WorkingDirResolver(c, self.cache).resolve(working_dir)
            return await c.create_conversation(resolved, llm, initial_message)

    async def probe(self, hosts: list[tuple[str, str, Key]]) -> list[Probe]:
        """For each (name, url, key): its home, or the error that kept us from it."""

        async def one(name: str, url: str, key: Key) -> Probe:
            try:
                base = normalize_base_url(url)
                return {
                    "name": name,
                    "url": base,
                    "home": await self.home_of(base, key),
                    "error": None,
                }
            except TandemError as e:
                return {"name": name, "url": url, "home": None, "error": e.message}

        return list(await asyncio.gather(*(one(*h) for h in hosts)))

    async def attach(
        self, session: str, host: str, url: str, api_key: Key, working_dir: str
    ) -> RemoteTarget:
        """Make HOST (at URL) SESSION's execution target, resolving WORKING_DIR now."""
        base = normalize_base_url(url)
        try:
            resolved = await self.resolve(base, api_key, working_dir)
        except TandemError as e:
            raise naming_host(e, host) from None
        target = RemoteTarget(
            session=session,
            host=host,
            url=base,
            working_dir=working_dir,
            resolved_working_dir=resolved,
        )
        save_target(self.home, target)
        self.remember_key(session, api_key)
        return target

    def attach_beside(self, session: str, other: str, working_dir: str) -> RemoteTarget:
        """Make SESSION run on OTHER's host in WORKING_DIR (absolute), with OTHER's key.

        No request: the host and its key are OTHER's, and WORKING_DIR is a path
        the caller computed (a parallel session's tree beside OTHER's dir)."""
        base = self.target(other)
        if base is None:
            raise TandemError("not-found", f"session {other} has no remote target")
        if not working_dir.startswith("/") or any(ord(c) < 32 for c in working_dir):
            raise TandemError("invalid", f"not an absolute POSIX working dir: {working_dir!r}")
        target = RemoteTarget(session=session, host=base.host, url=base.url,
                              working_dir=working_dir, resolved_working_dir=working_dir)
        save_target(self.home, target)
        if other in self._keys:
            self._keys[session] = self._keys[other]
        return target

    def remember_key(self, session: str, api_key: Key) -> None:
        """Keep SESSION's session API key in memory for its turns, checkpoints and Rewind."""
        if api_key is None:
            self._keys.pop(session, None)
        else:
            self._keys[session] = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)

    def session_client(self, session: str) -> tuple[RemoteTarget, AgentServerClient] | None:
        """SESSION's target and a client of its server (close it), or None if it has none."""
        target = self.target(session)
        if target is None:
            return None
        key = self._keys.get(session) or self.key_lookup(target)
        return target, self.client(target.url, key)

    def target(self, session: str) -> RemoteTarget | None:
        """SESSION's remote target, or None."""
        return load_target(self.home, session)

    def target_or_none(self, session: str) -> RemoteTarget | None:
        """SESSION's remote target for a listing: None also when its file is damaged.

        A listing must not fail on one bad file; ``remote/target`` reports it.
        """
        try:
            return load_target(self.home, session)
        except TandemError:
            return None

    def attached(self) -> set[str]:
        """The sessions that have a target file (one directory read, for listings)."""
        try:
            names = os.listdir(targets_dir(self.home))
        except FileNotFoundError:
            return set()
        return {n[: -len(".json")] for n in names if n.endswith(".json")
                and not n.startswith(".")}

    def detach(self, session: str) -> bool:
        """Forget SESSION's remote target; True if it had one."""
        self._keys.pop(session, None)
        return remove_target(self.home, session)
