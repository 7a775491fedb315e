"""Recorded runs as the engine reads them: loading a run by id or file, its turns a
window at a time, what a fork reads of its parent, runs written from elsewhere, and bundles.

The bottom room of `recording`: it imports none of the other rooms.
"""
