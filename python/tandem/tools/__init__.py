"""Native tools with capability classes and permissions.

`files` (read: read_file, list_files, grep), `instruments` (read: what
Emacs knows, diagnostics, definitions, references, outline, open_buffers,
project_files), `edit` (edit: edit_file,
write_file), `shell` (execute: shell) run inside the workspace root
(`paths`); `permissions` decides allow / ask / refuse from the mode and the
read-only ceiling; `executor` runs one model tool call through all of that.
"""
