"""config.json's text part, read key by key: which key each value came from, for the output."""

from __future__ import annotations

from typing import Any

from advisor.plan.figures import ASSUMED, READ, AnyInput, Input, PlanError


def config_int(raw: dict[str, Any], *keys: str) -> int:
    """The first of keys that holds a whole number, else 0: for estimates, which must not fail on odd keys."""
    for key in keys:
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


class Config:
    """config.json's text part, remembering which key each value came from."""

    def __init__(self, raw: dict[str, Any], name: str):
        text = raw.get("text_config")
        self.raw = {**raw, **text} if isinstance(text, dict) else raw
        self.prefix = "config.json text_config" if isinstance(text, dict) else "config.json"
        self.name = name
        self.inputs: list[AnyInput] = []

    def get(self, *keys: str) -> tuple[str, Any] | tuple[None, None]:
        for key in keys:
            if self.raw.get(key) is not None:
                return key, self.raw[key]
        return None, None

    def number(self, label: str, keys: tuple[str, ...], default: int | None = None, default_basis: str = "") -> int:
        key, value = self.get(*keys)
        if key is None:
            if default is None:
                raise PlanError(f"{self.name}: config.json has no {' / '.join(keys)}")
            self.inputs.append(Input(label, default, ASSUMED, default_basis))
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise PlanError(f"{self.name}: config.json {key} is {value!r}, not a whole number")
        self.inputs.append(Input(label, value, READ, f"{self.prefix} {key}"))
        return value
