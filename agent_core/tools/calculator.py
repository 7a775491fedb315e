"""Safe arithmetic: an `ast` walk over numbers and operators, never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from agent_core.tools.registry import ToolFailure

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1_000  # 10**100000 would take the process with it
MAX_RESULT_BITS = 100_000
MAX_LENGTH = 500


def evaluate(expression: str) -> int | float:
    if len(expression) > MAX_LENGTH:
        raise ToolFailure(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolFailure(f"not an arithmetic expression: {expression!r}") from None
    try:
        value: int | float = _eval(tree.body)
    except ZeroDivisionError:
        raise ToolFailure("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolFailure(f"cannot compute: {exc}") from None
    return value


def format_number(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (
            abs(right) > MAX_EXPONENT
            or (isinstance(left, int) and left.bit_length() * abs(right) > MAX_RESULT_BITS)
        ):
            raise ToolFailure("result too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args))
    allowed = "numbers, + - * / // % **, parentheses, " + ", ".join([*_FUNCTIONS, *_CONSTANTS])
    raise ToolFailure(f"only arithmetic is allowed ({allowed}); got {ast.unparse(node)!r}")
