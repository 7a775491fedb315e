"""The key footer, rebuilt only when the keys it shows change.

Textual's `Footer` rebuilds its keys (a widget each, styled anew) whenever the screen says
its bindings may have changed: on mount, on each focus change, whenever a widget asks.
Opening a screen did that about ten times with the same keys, a third of a second of
styling on the event loop of a busy machine (bench/tui.py, the diff screens). This one
rebuilds only when the keys it shows, their state or their labels differ.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown_keys: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            # What `compose` shows: the bindings shown, and the command palette's key.
            active = screen.active_bindings
            keys = (
                *(
                    (binding, enabled, tooltip)
                    for (_, binding, enabled, tooltip) in active.values()
                    if binding.show
                ),
                active.get(screen.app.COMMAND_PALETTE_BINDING, (None,))[1:],
            )
            if keys == self._shown_keys:
                return  # the same keys: rebuilding them would look the same
            self._shown_keys = keys
        super().bindings_changed(screen)
