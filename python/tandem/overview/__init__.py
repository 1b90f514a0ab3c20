"""Every session at a glance: the listing plus each session's live state."""
