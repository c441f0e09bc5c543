"""Grading a class: `grade` (score tables), `sandbox` (bubblewrap), `worker` (runs one submission inside it), `runner` (a learner's notebooks headless)."""
