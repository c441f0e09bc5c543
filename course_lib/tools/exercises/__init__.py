"""The exercise workflow: `command` (`exercises list | reset | progress | build | grade`), `files` (names, folders, backups), `build` (learner notebooks from the solutions)."""
