"""A number with where it came from: read (config, safetensors), given (a flag), estimated or assumed."""
from __future__ import annotations

from dataclasses import dataclass

READ, GIVEN, ESTIMATED, ASSUMED, COMPUTED = "read", "given", "estimated", "assumed", "computed"


class PlanError(Exception):
    """Bad input to `plan`: reported in one line, exit 2."""


@dataclass(frozen=True)
class Input:
    name: str
    value: int | float | str | None
    source: str  # READ, GIVEN, ESTIMATED or ASSUMED
    basis: str  # where exactly: "config.json num_key_value_heads", "--tensor-parallel-size"

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "source": self.source, "basis": self.basis}


@dataclass(frozen=True)
class Figure:
    """A result, the formula that made it and the inputs that went in."""

    name: str
    value: int | float
    unit: str
    formula: str
    inputs: tuple[Input, ...] = ()
    source: str = COMPUTED  # ESTIMATED when an estimated input went in

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "unit": self.unit, "formula": self.formula,
                "source": self.source, "inputs": [i.as_dict() for i in self.inputs]}
