"""Coding agents' own session files as imported runs: Claude Code's transcripts
(`claude_code`) and Codex CLI's rollouts (`codex`). `session` holds what both share: the
JSON Lines reading (a bad line is one problem, never fatal) and the run being built."""
