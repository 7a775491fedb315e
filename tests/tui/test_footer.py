"""The key footer rebuilds its keys only when the keys it shows change."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from tests.tui.conftest import settle
from workbench.tui.footer import Footer


class Form(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+t", "toggle", "Toggle")]
    enabled = True

    def compose(self) -> ComposeResult:
        yield Input(id="first")
        yield Input(id="second")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # None: shown greyed out (False would hide it).
        return None if action == "toggle" and not self.enabled else True


def _keys(app: App[None]) -> list[FooterKey]:
    return list(app.query(FooterKey))


async def test_moving_the_focus_keeps_the_same_keys() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await settle(pilot, lambda: _keys(app))
        shown = _keys(app)
        for _ in range(3):
            await pilot.press("tab")  # each focus change says the bindings may have changed
            await settle(pilot)
        assert _keys(app) == shown  # the very same widgets: nothing was rebuilt


async def test_a_key_that_changes_is_shown() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await settle(pilot, lambda: _keys(app))
        (toggle,) = [key for key in _keys(app) if key.description == "Toggle"]
        assert not toggle.has_class("-disabled")
        app.enabled = False
        app.screen.refresh_bindings()
        await settle(
            pilot,
            lambda: (
                [k.has_class("-disabled") for k in _keys(app) if k.description == "Toggle"]
                == [True]
            ),
        )
