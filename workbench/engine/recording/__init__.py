"""Recorded runs: loading, field-level comparison, replay, fork and the run service.

The bottom of the engine: every other sub-package may import it, it imports none of them.
"""
