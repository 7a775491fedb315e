"""Widgets the screens compose: each owns one part of a screen (a tree, a detail pane, a
dialog's boxes), loads what it shows in workers of its own (`screens.WorkbenchWidget`), and
says what happened in messages the screen routes. Each can be mounted and tested alone."""
