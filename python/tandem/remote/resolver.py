"""Working-dir resolution: the one way a remote working dir becomes absolute.

Relative → the host's home (``GET /api/file/home``) joined with it; empty →
the home itself; absolute POSIX, Windows drive and UNC paths pass through
unchanged. Uploads and conversations both go through here, so a
conversation's worktree and its uploads land in the same folder.
"""

from __future__ import annotations

from tandem.protocol.base import TandemError
from tandem.protocol.remote import is_absolute
from tandem.remote.client import AgentServerClient
from tandem.remote.home_cache import HomeCache
from tandem.remote.paths import join_under, relative_parts


class WorkingDirResolver:
    """Resolves working dirs for one CLIENT, using the shared per-host CACHE."""

    def __init__(self, client: AgentServerClient, cache: HomeCache) -> None:
        self.client = client
        self.cache = cache

    async def home(self) -> str:
        """The host's home without trailing separators (cached per host and key)."""
        return await self.cache.get(self.client.cache_key, self.client.home)

    async def resolve(self, working_dir: str | None) -> str:
        """WORKING_DIR as an absolute server path (see the module doc)."""
        if working_dir is not None and not isinstance(working_dir, str):
            raise TandemError("invalid", f"working dir must be a string, not {working_dir!r}")
        if working_dir and is_absolute(working_dir):
            if any(ord(c) < 32 for c in working_dir):
                raise TandemError(
                    "invalid", f"working dir has a control character: {working_dir!r}"
                )
            return working_dir
        parts = relative_parts(working_dir or "")
        return join_under(await self.home(), parts)
