"""Generated runs of many turns for the TUI's windowed screens (timeline, comparison)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from traces.events import ModelRequest, ModelResponse, RunEnd, RunStart, ToolEnd, ToolStart, Totals
from traces.recorder import Recorder
from traces.writer import JsonlWriter

LONG = "7" * 32
TURNS = 130  # more than a window of turns (`TURN_WINDOW`, 100)


def long_run(
    folder: Path,
    turns: int,
    ended: bool = True,
    run_id: str = LONG,
    result: Callable[[int], str] = lambda turn: "ok",
    *,
    counted: bool = False,
    model: str = "gpt-4o-mini",
) -> None:
    """A completed run of `turns` turns, each a model call that asks for one tool call
    answered `result(turn)`; turn n's call was billed n prompt and 2n completion tokens.
    Not `ended`: the trace stops after its last turn, without a run_end. `counted`: the
    run_end carries every total (calls, tokens), not just the turns."""
    writer = JsonlWriter(folder, run_id)
    rec = Recorder(run_id, [writer])
    rec.emit(RunStart, turn=None, task="a long task", model=model)
    for turn in range(1, turns + 1):
        rec.turn = turn
        rec.emit(ModelRequest, messages=[{"role": "user", "content": f"step {turn}"}])
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        message = {"role": "assistant", "content": f"step {turn}", "tool_calls": [call]}
        usage = {"prompt_tokens": turn, "completion_tokens": 2 * turn}
        rec.emit(ModelResponse, message=message, usage=usage)
        rec.emit(ToolStart, call_id=f"c{turn}", name=f"tool_of_turn_{turn}", arguments_raw="{}")
        rec.emit(
            ToolEnd, call_id=f"c{turn}", name=f"tool_of_turn_{turn}", ok=True, result=result(turn)
        )
    if ended:
        totals = Totals(turns=turns)
        if counted:
            tokens_in, tokens_out = turns * (turns + 1) // 2, turns * (turns + 1)
            totals = Totals(
                turns=turns,
                model_calls=turns,
                tool_calls=turns,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                total_tokens=tokens_in + tokens_out,
            )
        rec.emit(RunEnd, turn=None, status="completed", totals=totals)
    rec.close()
