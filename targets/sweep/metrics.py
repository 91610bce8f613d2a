"""A trial's metric from what it prints, and `--stop-when`'s condition.

The metric is the last `NAME=<number>` a trial prints (a word boundary before NAME, so `val_loss=` is not `loss=`),
or the last JSON object line with NAME as a key whose value is a number: the two ways training scripts already
report (NNI's `report_final_result` prints neither, so a one-line `print(f"loss={loss}")` is all a script needs).
"""

from __future__ import annotations

import json
import math
import operator
import re
from typing import Callable, Iterable, NamedTuple, Optional

from paictl.errors import UsageError

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)"
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt, ">": operator.gt}


def metric_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(name)}\s*=\s*({_NUMBER})(?![\w.])", re.IGNORECASE)


def metric_of(lines: Iterable[str], name: str) -> Optional[float]:
    """The last value of NAME the lines report (None if none does)."""
    pattern = metric_pattern(name)
    found: Optional[float] = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("{") and name in stripped:
            try:
                data = json.loads(stripped)
            except ValueError:
                data = None
            if isinstance(data, dict):
                value = data.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found = float(value)
                continue
        for match in pattern.finditer(line):
            found = float(match.group(1))
    return found


class StopCondition(NamedTuple):
    name: str
    symbol: str
    threshold: float

    def met(self, value: Optional[float]) -> bool:
        return value is not None and not math.isnan(value) and _OPERATORS[self.symbol](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.name}{self.symbol}{self.threshold:g}"


def parse_stop_when(text: str, metric: Optional[str]) -> StopCondition:
    """`metric<0.1` (or the metric's own name on the left), with <, <=, >, >= or ==."""
    if metric is None:
        raise UsageError("--stop-when compares the trials' metric: give --metric NAME too")
    match = re.fullmatch(rf"\s*([\w.-]+)\s*(<=|>=|==|<|>)\s*({_NUMBER})\s*", text, re.IGNORECASE)
    if match is None or match.group(1) not in ("metric", metric):
        raise UsageError(f"--stop-when {text!r}: expected e.g. 'metric<0.1' (or '{metric}<0.1'), with <, <=, >, >= "
                         "or ==")
    return StopCondition(metric, match.group(2), float(match.group(3)))
