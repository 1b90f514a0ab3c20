"""Crash-safe file primitives: atomic replace, directory fsync, moves across filesystems."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync directory PATH so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace PATH with DATA: write a temp file beside it, fsync, rename, fsync dir."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    fsync_dir(path.parent)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tree_digest(path: Path) -> dict[str, str]:
    if path.is_file():
        return {"": _file_digest(path)}
    out: dict[str, str] = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(path))] = _file_digest(p)
    return out


def move(src: Path, dst: Path, rename: Callable[[Path, Path], None] = os.rename) -> None:
    """Move file or folder SRC to DST (which must not exist).

    Same filesystem: one ``rename``. Across filesystems (EXDEV): copy to a
    temp name beside DST, verify every byte by digest, rename into place,
    then delete SRC; on any failure before the delete, the copy is removed
    and SRC is untouched.
    """
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "destination exists", str(dst))
    try:
        rename(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    tmp = dst.with_name(f".{dst.name}.moving-{os.getpid()}")
    try:
        if src.is_dir():
            shutil.copytree(src, tmp, symlinks=True)
        else:
            shutil.copy2(src, tmp)
        for p in [tmp, *tmp.rglob("*")] if tmp.is_dir() else [tmp]:
            if p.is_file():
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        if _tree_digest(src) != _tree_digest(tmp):
            raise OSError(errno.EIO, "copy verification failed", str(dst))
        os.rename(tmp, dst)
        fsync_dir(dst.parent)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            _unlink_quietly(tmp)
        raise
    if src.is_dir():
        shutil.rmtree(src)
    else:
        os.unlink(src)
    fsync_dir(src.parent)
