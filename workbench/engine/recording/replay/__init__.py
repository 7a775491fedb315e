"""Offline replay: the replay model and tools, what counts as "the same request", the field
diff, and replay verified in a process of its own.

Stands on `recording.runs` only.
"""
