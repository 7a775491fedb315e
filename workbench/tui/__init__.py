"""The Textual workbench: the only package that imports Textual."""
