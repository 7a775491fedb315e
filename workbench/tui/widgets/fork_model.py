"""The fork dialog's model boxes: base URL, model name, API key, or a model script file.
The last model chosen is remembered by the App for the next dialog."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label

from workbench.tui.backend import Endpoint
from workbench.tui.screens import WorkbenchWidget

BOXES = {"base_url": "#fork-base-url", "model": "#fork-model", "api_key": "#fork-api-key"}


class ModelBoxes(Vertical, WorkbenchWidget):
    """Which model a fork talks to."""

    DEFAULT_CSS: ClassVar[str] = "ModelBoxes { height: auto; }"

    def __init__(self) -> None:
        super().__init__(id="fork-model-boxes")
        # The model settings the boxes were filled from (`compose`; for the parent's wire
        # format once it is known).
        self._shown = Endpoint()

    def compose(self) -> ComposeResult:
        yield Label("model", classes="field-label")
        endpoint = self._shown = self.workbench.fork_endpoint or self.workbench.endpoint
        with Horizontal(classes="form-row"):
            yield Input(
                endpoint.base_url or "",
                placeholder="base URL, e.g. http://127.0.0.1:8080/v1",
                id="fork-base-url",
            )
            yield Input(endpoint.model or "", placeholder="model name", id="fork-model")
        with Horizontal(classes="form-row"):
            yield Input(
                endpoint.api_key or "",
                placeholder="API key (never written to traces)",
                password=True,
                id="fork-api-key",
            )
            yield Input(
                str(endpoint.script or ""), placeholder="or a model script file", id="fork-script"
            )

    def endpoint(self) -> Endpoint:
        def value(widget_id: str) -> str | None:
            return self.query_one(widget_id, Input).value.strip() or None

        script = value("#fork-script")
        # The settings the boxes were filled from: what came from the environment and is
        # unchanged is read again for the fork's wire format.
        return self._shown.edited(
            base_url=value("#fork-base-url"),
            model=value("#fork-model"),
            api_key=value("#fork-api-key"),
            script=Path(script) if script else None,
        )

    def use_script(self, script: Path) -> None:
        self.query_one("#fork-script", Input).value = str(script)

    @on(Input.Changed)
    def _changed(self) -> None:
        # Remembered for the next dialog, which may fork a run of another wire format.
        self.workbench.fork_endpoint = replace(self.endpoint(), api=self.workbench.endpoint.api)

    def show_settings_for(self, api: str) -> None:
        """Fill the boxes with what the environment gives for the parent's wire format (a
        fork of an Anthropic run reads ANTHROPIC_BASE_URL, not OpenAI's), when they still
        hold what they were filled with."""
        shown = self._shown
        if shown.api is not None or not shown.from_environment:
            return  # a wire format chosen, or nothing left to the environment
        inputs = {name: self.query_one(box, Input) for name, box in BOXES.items()}
        if any(inputs[name].value.strip() != (getattr(shown, name) or "") for name in BOXES):
            return  # changed by hand: the user's choice
        again = shown.for_api(api)
        if all(getattr(again, name) == getattr(shown, name) for name in BOXES):
            return  # the same values (a chat run): a fork reads them again for its format
        self._shown = again
        for name, box in inputs.items():
            box.value = getattr(again, name) or ""
