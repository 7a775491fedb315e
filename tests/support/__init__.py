"""Shared test helpers. Test folders put `tests/` on `sys.path` in their conftest.py
(see tests/model/conftest.py) and import `support.<module>`."""
