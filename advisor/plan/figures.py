"""A number with where it came from: read (config, safetensors), given (a flag), estimated or assumed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

READ, GIVEN, ESTIMATED, ASSUMED, COMPUTED = "read", "given", "estimated", "assumed", "computed"
# What an Input or a Figure holds: Input[int] for a byte count, Input[str] for a dtype, Figure[float] for a
# concurrency; an AnyInput (as in a list of mixed ones) may hold any of these.
V = TypeVar("V", bound="int | float | str | None", covariant=True)
N = TypeVar("N", bound="int | float", covariant=True)


class PlanError(Exception):
    """Bad input to `plan`: reported in one line, exit 2."""


@dataclass(frozen=True)
class Input(Generic[V]):
    name: str
    value: V
    source: str  # READ, GIVEN, ESTIMATED or ASSUMED
    basis: str  # where exactly: "config.json num_key_value_heads", "--tensor-parallel-size"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source, "basis": self.basis}


@dataclass(frozen=True)
class Figure(Generic[N]):
    """A result, the formula that made it and the inputs that went in."""

    name: str
    value: N
    unit: str
    formula: str
    inputs: tuple[AnyInput, ...] = ()
    source: str = COMPUTED  # ESTIMATED when an estimated input went in

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "formula": self.formula,
            "source": self.source,
            "inputs": [i.as_dict() for i in self.inputs],
        }


# An Input of any kind, as in a list of mixed ones (Input is covariant: an Input[int] is one).
AnyInput = Input[int | float | str | None]
