"""What the remote methods ask that is more than one call of `RemoteService`.

Local paths a method names must be absolute: a relative one would depend
on the backend's working directory.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from tandem.protocol.base import TandemError
from tandem.protocol.remote import UploadResult
from tandem.remote.service import RemoteService


def local_path(path: str) -> Path:
    """PATH as a local absolute path (``~`` expanded); a clear error for a relative one."""
    local = Path(path).expanduser()
    if not local.is_absolute():
        raise TandemError("invalid", f"local paths must be absolute: {path!r}")
    return local


async def upload(remote: RemoteService, url: str, api_key: SecretStr | None, working_dir: str,
                 files: list[str]) -> tuple[str, list[UploadResult]]:
    """Upload local FILES (basenames only) into the resolved WORKING_DIR; where they went."""
    return await remote.upload(url, api_key, working_dir, [local_path(f) for f in files])


async def download(remote: RemoteService, url: str, api_key: SecretStr | None, path: str,
                   dest: str) -> tuple[Path, int]:
    """Download server file PATH to local DEST (written atomically); DEST and its size."""
    local = local_path(dest)
    async with remote.client(url, api_key) as c:
        size = await c.download_to(path, local)
    return local, size
