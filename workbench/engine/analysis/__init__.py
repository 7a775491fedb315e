"""Answers from many runs at once: failing runs grouped by failure signature (`failures`),
and N runs of one task against the path their passing runs share (`compare`, over the
groups `groups` names).

A wing of its own (SPEC: "the analysis … are engine wings of their own"): it reads the
store and may stand only on `recording` and `serving` among the other wings.
"""
