"""What a fork may cost before it is made (`workbench why --max-cost`): the estimate; the
prices and the cap are `traces.prices`, shared with `workbench judge`.

An estimate is an upper bound: every turn a fork may still take sends its whole history
again, and the run's token budget caps the sum.

    estimate = fork_estimate(prices, model, prompt_tokens=1200, turns_left=4, budget=50_000)
    cap = CostCap(0.05)
    if cap.refusal(estimate, "fork") is None: ...; cap.spend(actual)
"""

from __future__ import annotations

from traces.prices import Estimate, Prices

# Output tokens assumed per turn when nothing recorded says otherwise.
OUTPUT_PER_TURN = 512


def fork_estimate(
    prices: Prices,
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
