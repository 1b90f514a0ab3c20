"""Parallel sessions: a session in its own git worktree (or copy), landed hunk by hunk."""
