"""What a model call may cost before it is made, from `<home>/prices.toml`, and a cap on it
(`workbench why --max-cost`; the judges read the same file).

The prices themselves are read by the front end (`views.cost.Prices.load(home)`: this wing
may not import `views`) and handed here as anything with `cost(model, input, output)`. An
estimate is an upper bound: every turn a fork may still take sends its whole history again,
and the run's token budget caps the sum.

    estimate = fork_estimate(prices, model, prompt_tokens=1200, turns_left=4, budget=50_000)
    cap = CostCap(0.05)
    if cap.allows(estimate): ...; cap.spend(actual)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Output tokens assumed per turn when nothing recorded says otherwise.
OUTPUT_PER_TURN = 512


class PriceTable(Protocol):
    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None: ...

    def format(self, amount: float | None) -> str: ...


@dataclass(frozen=True)
class Estimate:
    """The most a fork may cost; `amount` None when its model has no price."""

    model: str
    input_tokens: int
    output_tokens: int
    amount: float | None


def fork_estimate(
    prices: PriceTable,
    model: str,
    *,
    prompt_tokens: int,
    turns_left: int,
    budget: int,
    output_per_turn: int = OUTPUT_PER_TURN,
) -> Estimate:
    """The most a fork continuing with `model` may cost: `turns_left` requests of about
    `prompt_tokens` each (its history at the fork turn) and their answers, no more than the
    run's token `budget` in all."""
    turns = max(1, turns_left)
    output = min(turns * output_per_turn, budget)
    input_tokens = min(turns * prompt_tokens, max(0, budget - output))
    return Estimate(model, input_tokens, output, prices.cost(model, input_tokens, output))


class CostCap:
    """Money spent on live calls, against the most the user allows (None: no cap)."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0

    def refusal(self, estimate: Estimate) -> str | None:
        """Why a call estimated so may not be made, or None when it may."""
        if self.limit is None:
            return None
        if estimate.amount is None:
            return (
                f"the model {estimate.model} has no price in prices.toml, so --max-cost "
                "cannot be kept: price it, or leave --max-cost out"
            )
        if self.spent + estimate.amount > self.limit:
            return (
                f"--max-cost {self.limit:g} reached: {self.spent:.4f} spent, the next fork "
                f"may cost up to {estimate.amount:.4f}"
            )
        return None

    def spend(self, amount: float | None) -> None:
        self.spent += amount or 0.0
