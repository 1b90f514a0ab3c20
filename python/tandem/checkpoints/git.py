"""Run git against the private checkpoint repository, never the user's.

Every call gets an environment built from scratch for git: the caller's
``GIT_*`` variables are dropped (an Emacs started inside a repository may
export ``GIT_DIR``), the user's global and system configuration are not read
(a global ``core.autocrlf``, ``core.fsmonitor`` or a clean filter must not
change what a snapshot stores), and ``GIT_DIR``/``GIT_WORK_TREE``/
``GIT_INDEX_FILE`` point at the private repository, the region being
captured and its private index. Messages are in the C locale because a few
warnings are parsed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Generator, Iterable
from pathlib import Path

from tandem import secrets
from tandem.protocol.base import TandemError

_IDENTITY = {
    "GIT_AUTHOR_NAME": "tandem",
    "GIT_AUTHOR_EMAIL": "tandem@localhost",
    "GIT_COMMITTER_NAME": "tandem",
    "GIT_COMMITTER_EMAIL": "tandem@localhost",
}


class GitError(TandemError):
    """A git command failed: ``code`` is ``checkpoint-failed``; DATA has stderr."""

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        shown = args
        while shown[:1] == ["-c"]:  # per-call options: name the command itself
            shown = shown[2:]
        message = f"git {' '.join(shown[:2])} failed ({returncode}): {stderr.strip()[:500]}"
        super().__init__("checkpoint-failed", message, {"stderr": stderr})
        self.returncode = returncode
        self.stderr = stderr


def find_git() -> str:
    """Return the git executable, or raise ``unavailable`` when there is none."""
    exe = shutil.which("git")
    if exe is None:
        raise TandemError("unavailable", "checkpoints need git, and git is not on PATH")
    return exe


def user_excludes_file() -> str | None:
    """The user's global ``core.excludesFile`` (read with their own config), if set."""
    try:
        # The user's own environment on purpose: GIT_CONFIG_GLOBAL is theirs.
        proc = subprocess.run(
            [find_git(), "config", "--global", "--path", "--get", "core.excludesFile"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    value = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return value or None


class Running:
    """A git process `Git.start` started: `wait` for it, or `stop` it."""

    def __init__(self, args: list[str], proc: subprocess.Popen[bytes]) -> None:
        self.args = args
        self.proc = proc

    def wait(self) -> None:
        """Wait for the process; raise `GitError` when it failed."""
        _, err = self.proc.communicate()
        if self.proc.returncode != 0:
            raise GitError(self.args, self.proc.returncode, err.decode("utf-8", "replace"))

    def stop(self) -> None:
        """End the process now (git removes its lock files on SIGTERM) and reap it."""
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.communicate()


class Git:
    """A git runner bound to one private repository (``git_dir``)."""

    def __init__(self, git_dir: Path, excludes_file: str | None = None,
                 *, options: list[str] | None = None) -> None:
        self.git_dir = git_dir
        self.exe = find_git()
        # No secret either (tandem.secrets): git runs hooks-free, but a
        # credential helper or an ssh command would see the environment.
        base = {k: v for k, v in secrets.child_env().items() if not k.startswith("GIT_")}
        base.update(_IDENTITY)
        base.update(
            {
                "GIT_DIR": str(git_dir),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0",
                # A path named "*.c" or ":(top)" is a path, never a pattern.
                "GIT_LITERAL_PATHSPECS": "1",
                "LC_ALL": "C",
                "LANGUAGE": "C",
            }
        )
        self._env = base
        # The user's own ignore file still applies, as it would for them.
        # Objects hold copies of the user's files (untracked .env included):
        # git creates everything in the private repository 0600/0700.
        self._prefix = [self.exe, "-c", "core.sharedRepository=0600"] if options is None else [
            self.exe, *options]
        if excludes_file:
            self._prefix += ["-c", f"core.excludesFile={excludes_file}"]

    @classmethod
    def of_user_repository(cls, git_dir: Path) -> Git:
        """A runner for the user's own repository GIT_DIR (parallel sessions' worktrees).

        The same scrubbed environment, and the repository's own configuration
        can run no program: no hook (``core.hooksPath``), no fsmonitor. Callers
        never run a command that applies filters (no checkout, no add).
        """
        return cls(git_dir, options=["-c", f"core.hooksPath={os.devnull}",
                                     "-c", "core.fsmonitor=false"])

    def env(self, work_tree: Path | None = None, index: Path | None = None) -> dict[str, str]:
        """The environment for one call, with the region's work tree and index."""
        env = dict(self._env)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        return env

    def run(
        self,
        args: list[str],
        *,
        work_tree: Path | None = None,
        index: Path | None = None,
        input: bytes | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; raise `GitError` on a non-zero exit when CHECK."""
        cwd = work_tree if work_tree is not None else self.git_dir
        proc = subprocess.run(
            self._prefix + args,
            input=input,
            capture_output=True,
            env=self.env(work_tree, index),
            cwd=cwd,
            check=False,
        )
        if check and proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc

    def start(self, args: list[str], *, work_tree: Path | None = None,
              index: Path | None = None) -> Running:
        """Start ``git ARGS`` and return at once (its output is dropped; errors are kept)."""
        cwd = work_tree if work_tree is not None else self.git_dir
        proc = subprocess.Popen(self._prefix + args, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=self.env(work_tree, index), cwd=cwd)
        return Running(args, proc)

    def run_parallel(
        self, calls: list[list[str]], *, work_tree: Path | None = None, index: Path | None = None
    ) -> list[subprocess.CompletedProcess[bytes]]:
        """Run several read-only ``git`` calls at once (they use separate cores)."""
        env = self.env(work_tree, index)
        cwd = work_tree if work_tree is not None else self.git_dir
        procs = [
            subprocess.Popen(
                self._prefix + args,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
            )
            for args in calls
        ]
        outputs: list[tuple[bytes, bytes]] = [(b"", b"")] * len(procs)

        def drain(i: int) -> None:
            outputs[i] = procs[i].communicate()

        # One thread per extra process: a full pipe must never stall another.
        threads = [threading.Thread(target=drain, args=(i,)) for i in range(1, len(procs))]
        for t in threads:
            t.start()
        drain(0)
        for t in threads:
            t.join()
        results = []
        for args, proc, (out, err) in zip(calls, procs, outputs, strict=True):
            assert proc.returncode is not None
            if proc.returncode != 0:
                raise GitError(args, proc.returncode, err.decode("utf-8", "replace"))
            results.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
        return results

    def out(
        self,
        args: list[str],
        *,
        work_tree: Path | None = None,
        index: Path | None = None,
        input: bytes | None = None,
    ) -> str:
        """Run ``git ARGS`` and return its stdout, stripped."""
        proc = self.run(args, work_tree=work_tree, index=index, input=input)
        return proc.stdout.decode("utf-8", "surrogateescape").strip()

    def blobs(self, shas: Iterable[str]) -> Generator[tuple[str, bytes], None, None]:
        """Yield ``(sha, content)`` for each blob, through one ``cat-file --batch``."""
        wanted = list(shas)
        if not wanted:
            return
        proc = subprocess.Popen(
            self._prefix + ["cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env(),
            cwd=self.git_dir,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            # One name, then its answer: writing every name first could fill
            # both pipes and deadlock on a large restore.
            for sha in wanted:
                proc.stdin.write(sha.encode() + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().decode().split()
                if len(header) != 3 or header[1] != "blob":
                    raise TandemError(
                        "checkpoint-failed", f"object {sha} is missing from the checkpoint store"
                    )
                size = int(header[2])
                data = proc.stdout.read(size)
                proc.stdout.read(1)
                yield sha, data
        finally:
            proc.stdin.close()
            proc.stdout.close()
            proc.wait()
