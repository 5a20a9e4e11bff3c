"""A catalogued template filled with sample values and wrapped in the log envelope of its era."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sources import version_key

PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(?:\d+|\*)?(?:\.\d+)?[hlL]?([diouxXeEfFgGcrs%])")
SPEC = re.compile(r"[<>^=]?[+\- ]?#?0?\d*[,_]?(?:\.\d+)?[bcdeEfFgGnosxX%]?")
# Placeholders whose value is a word (a dtype, a method, a device, an exception), unless the name
# says it counts something; "_" separates words in these names.
WORDY = re.compile(
    r"(?:^|[^a-z])(?:dtype|quant\w*|method|name|arch\w*|device|backend|mode|type|version|"
    r"e|err|error|exc|reason|path|kind|config|args|cls|key|msg|scheme|str)(?:[^a-z]|$)",
    re.I,
)
COUNTED = re.compile(r"len|num|size|tokens|blocks|count|heads|layers|gib|memory|bytes|util|capability", re.I)
GIB_AFTER = re.compile(r"\s*(?:GiB|GB)\b")
LEVELS = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
}
# The bracketed "[file.py:N]" prefix appeared in 0.8.3; older releases print "file.py:N]".
BRACKETED_SINCE = version_key("0.8.3")


@dataclass
class Placeholder:
    start: int
    end: int
    expr: str
    spec: str  # the format spec or %-conversion, "" when none
    percent: bool = False


def placeholders(template: str, style: str) -> list[Placeholder]:
    if style == "%":
        return [
            Placeholder(m.start(), m.end(), "", m.group(0), True)
            for m in PERCENT.finditer(template)
            if m.group(1) != "%"
        ]
    if style != "{}":
        return []
    found, depth, start = [], 0, 0
    for index, char in enumerate(template):
        if char == "{":
            depth, start = depth + 1, (index if depth == 0 else start)
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append(_brace(template, start, index + 1))
    return found


def _brace(template: str, start: int, end: int) -> Placeholder:
    body = template[start + 1 : end - 1]
    expr, spec = body, ""
    if ":" in body and SPEC.fullmatch(tail := body.rsplit(":", 1)[1]) and "[" not in tail:
        expr, spec = body.rsplit(":", 1)[0], tail
    expr = re.sub(r"![rsa]$", "", expr)
    return Placeholder(start, end, expr, spec)


def sample(index: int, holder: Placeholder, after: str) -> str:
    """The text of a distinct sample value for one placeholder, formatted as vLLM would print it."""
    conversion = holder.spec[-1:] if holder.spec[-1:].isalpha() or holder.spec.endswith("%") else ""
    if WORDY.search(holder.expr) and not COUNTED.search(holder.expr) and not conversion:
        return f"word{chr(ord('a') + index % 26)}"  # letters only: names in the grammar have no digits
    floating = conversion in tuple("eEfFgG%") or (
        conversion not in tuple("dixX") and (GIB_AFTER.match(after) or re.search(r"util|gib|_gb\b", holder.expr, re.I))
    )
    if not floating:
        value: float = 2048 * (index + 1) + 7 * index
    else:
        value = round(0.85 + 0.01 * index, 2) if "util" in holder.expr else round(1.25 + 3.5 * index, 2)
    if holder.percent:  # %s and %r print str() and repr()
        return holder.spec % value
    return format(value, holder.spec)


def fill(template: str, style: str, given: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """(message, the sample text of each placeholder in order); `given` sets some by position."""
    out, texts, position = [], [], 0
    for index, holder in enumerate(placeholders(template, style)):
        text = (given or {}).get(str(index)) or sample(index, holder, template[holder.end :])
        out += [template[position : holder.start], text]
        texts.append(text)
        position = holder.end
    out.append(template[position:])
    message = "".join(out)
    return (message.replace("%%", "%") if style == "%" else message), texts


def lines(entry: dict) -> list[str]:
    """The filled message as a log line of each envelope era that the entry's releases span."""
    message, _ = fill(entry["template"], entry["style"], entry.get("samples"))
    if not entry["call"].startswith("logger."):
        return [f"{entry['call']}: {message}"]
    level = LEVELS[entry["call"].removeprefix("logger.").removesuffix("_once")]
    name = entry["file"].rsplit("/", 1)[-1]
    eras = {version_key(entry["first"]) >= BRACKETED_SINCE, version_key(entry["last"]) >= BRACKETED_SINCE}
    return [
        f"{level} 12-01 10:00:00 [{name}:1] {message}" if bracketed else f"{level} 12-01 10:00:00 {name}:1] {message}"
        for bracketed in sorted(eras)
    ]


def expected(entry: dict, values: dict[str, int]) -> dict[str, str]:
    """Fact name -> the sample text of the placeholder that `values` names by position (0 = the first)."""
    _, texts = fill(entry["template"], entry["style"], entry.get("samples"))
    return {name: texts[where] for name, where in values.items()}
