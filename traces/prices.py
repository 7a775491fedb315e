"""What tokens cost, from prices the user supplies in `<home>/prices.toml`, and the one cap
on what live model calls may spend (`--max-cost` of `workbench judge` and `workbench why`):

    # dollars (or any currency) per million tokens, per model name as recorded
    currency = "$"
    [models."gpt-4o-mini"]
    input = 0.15
    output = 0.60

No file means no prices: costs are then `None` and nothing shows them. Pure data and
arithmetic, so every wing of the engine, the CLI and the TUI read prices the same way:

    prices = Prices.load(home)
    cap = CostCap(0.50)
    estimate = Estimate(model, input_tokens, output_tokens, prices.cost(model, ...))
    if (why_not := cap.refusal(estimate, "call")) is None: ...; cap.spend(actual)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from traces.user_files import read_text

PRICES_FILE = "prices.toml"


class PricesError(Exception):
    """A prices file that cannot be used; one line naming the file and the fix."""


@dataclass(frozen=True)
class ModelPrice:
    input_per_million: float
    output_per_million: float


@dataclass(frozen=True)
class Prices:
    models: dict[str, ModelPrice] = field(default_factory=dict)
    currency: str = "$"

    @classmethod
    def load(cls, home: Path) -> Prices:
        """The prices in `<home>/prices.toml`; none when the file does not exist."""
        path = home / PRICES_FILE
        try:
            data = tomllib.loads(read_text(path))
        except FileNotFoundError:
            return cls()
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PricesError(f"{path}: not a readable TOML file ({exc})") from None
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: dict[str, object], where: str = PRICES_FILE) -> Prices:
        models = data.get("models", {})
        currency = data.get("currency", "$")
        if not isinstance(models, dict) or not isinstance(currency, str):
            raise PricesError(
                f'{where}: expected [models."NAME"] tables with input and output prices '
                "per million tokens, and an optional currency string"
            )
        prices: dict[str, ModelPrice] = {}
        for name, entry in models.items():
            values = entry if isinstance(entry, dict) else {}
            given = [values.get("input"), values.get("output")]
            if not all(isinstance(v, int | float) and v >= 0 for v in given):
                raise PricesError(
                    f"{where}: model {name!r} needs input = N and output = N "
                    "(prices per million tokens, 0 or more)"
                )
            prices[str(name)] = ModelPrice(float(values["input"]), float(values["output"]))
        return cls(prices, currency)

    def __bool__(self) -> bool:
        return bool(self.models)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """The cost of these tokens on `model`, or None when it has no price."""
        price = self.models.get(model)
        if price is None:
            return None
        return (
            input_tokens * price.input_per_million + output_tokens * price.output_per_million
        ) / 1_000_000

    def rates(self) -> dict[str, tuple[float, float]]:
        """Each model's input and output price per million tokens (what the store's cost
        filters take)."""
        return {
            name: (price.input_per_million, price.output_per_million)
            for name, price in self.models.items()
        }

    def format(self, amount: float | None) -> str:
        """`$0.0123`: enough digits to tell small runs apart; empty when unknown."""
        if amount is None:
            return ""
        digits = 4 if amount < 1 else 2
        return f"{self.currency}{amount:.{digits}f}"


@dataclass(frozen=True)
class Estimate:
    """The most a model call (or a run of them) may cost; `amount` None when its model has
    no price."""

    model: str
    input_tokens: int
    output_tokens: int
    amount: float | None


# Float sums of prices may pass a cap by a rounding error: a cap of 0.5 over fifty calls
# of 0.01 must allow the fiftieth.
_CAP_SLACK = 1e-12


class CostCap:
    """Money spent on live calls, against the most the user allows (None: no cap). A call
    is made only when what was spent plus its estimate stays within the cap, so the cap
    holds exactly when estimates are upper bounds."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0

    def refusal(self, estimate: Estimate, what: str = "call") -> str | None:
        """Why the next `what` (a call, a fork), estimated so, may not be made; None when
        it may."""
        if self.limit is None:
            return None
        if estimate.amount is None:
            return (
                f"the model {estimate.model} has no price in prices.toml, so --max-cost "
                "cannot be kept: price it, or leave --max-cost out"
            )
        if self.spent + estimate.amount > self.limit + _CAP_SLACK:
            return (
                f"the next {what} (~{estimate.amount:.6f}) would pass --max-cost "
                f"{self.limit:g} (spent {self.spent:.6f})"
            )
        return None

    def spend(self, amount: float | None) -> None:
        self.spent += amount or 0.0
