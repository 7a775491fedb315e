"""Forks: the plan (a recorded prefix, the user's edits, the live suffix), the dry run, the
per-tool side-effect policy and the one fork runner every front end calls.

Stands on `recording.runs`, `recording.replay` and `recording.running`.
"""
