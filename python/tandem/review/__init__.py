"""Review a turn's patch: revert one hunk or one file, see a file before the turn."""
