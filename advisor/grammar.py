"""The Lark grammars: split a line into its envelope and body, and find the messages in the body."""
from __future__ import annotations

import hashlib
import os
import re
from functools import cache
from importlib import resources
from pathlib import Path

import lark

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from .facts import Fact
from .messages import ToFacts

# For each regex anchor, literals of which every match of the anchor contains at least one.
# String anchors need no entry: the string is its own literal. tests/test_fast_path.py fails
# when an anchor is added to the grammar without a line here. The prefilter looks for them in
# raw bytes, find_anchor in a line's text.
REGEX_ANCHOR_LITERALS: dict[str, tuple[str, ...]] = {
    "A_DEVICE_BLOCKS": (" blocks:",),
    "A_KV_CACHE_SIZE": (" KV cache size:",),
    "A_PROFILE_ROW": ("total_gpu_memory", "gpu_memory_utilization", "available_kv_cache_memory",
                      "non_torch_memory", "PyTorch activation peak memory"),
    "A_CPU_KV_SET": ("Explicitly set", "Auto set"),
    "A_CAPTURING": ("Capturing cudagraphs", "Capturing CUDA graph", "Capturing the model for CUDA graphs"),
    "A_PREEMPTION_TOTAL": ("cumulative_preemption",),
    "A_ENGINE_ID": ("Avg prompt throughput",),
    "A_CUDA_OOM": (" out of memory.",),
    "A_FAILED_CREATE_WEIGHTS": ("Failed to create ",),
    "A_CUDA_ERROR_OOM": ("CUDA error: out of memory", "CUDA_ERROR_OUT_OF_MEMORY"),
    "A_INITIALIZING": ("Initializing a",),
    "A_NAMESPACE": ("args: Namespace(",),
    "A_SERVER_VERSION": ("vLLM API server version", "vLLM version"),
    "A_FP8_TYPE_UNSUPPORTED": (" not supported in this architecture",),
    "A_NCCL_ERROR": ("NCCL error", "ncclSystemError", "ncclInternalError", "ncclUnhandledCudaError"),
    "A_ADDRESS_IN_USE": ("ddress already in use", "EADDRINUSE"),
    "A_INSPECTING_FAILED": ("Error in inspecting model architecture", "failed to be inspected"),
    "A_ENGINE_START_FAILED": ("EngineCore failed to start", "Engine core initialization failed",
                              "Engine process failed to start", "EngineCoreProc failed to start",
                              "Timed out waiting for "),
    "A_ENGINE_FATAL": ("EngineCore encountered a fatal error", "EngineCore hit an exception"),
    "A_ENGINE_DEAD": ("EngineDeadError", "Background loop has errored already", "Engine core proc "),
    "A_SHUTDOWN": ("trigger received signal=SIG", "Shutting down", "Received SIG"),
    "A_DECODER_PROMPT": ("prompt (length",),
    # HTTP/1.1" 4xx or 5xx: the quote and space before the status are fixed, the version is not.
    "A_HTTP_STATUS": ('" 4', '" 5'),
    "A_SWAP_TOO_LARGE": ("oo large swap space",),
    "A_EXCEPTION": ("Error", "Exception", "Interrupt", "Exit"),
}
# Facts about the shape of a traceback count only where they start the line's body;
# elsewhere "ValueError" or 'File "' is just a word inside a sentence.
STRUCTURAL_ANCHORS = {"A_TRACEBACK", "A_FILE", "A_EXCEPTION"}
# Real lines state a few messages; a hostile one full of anchors must not cost a parse per anchor.
MAX_ANCHORS_PER_LINE = 32


def data_dir(name: str) -> Path:
    """A data folder shipped in the wheel (advisor/grammars), or the repository's top-level one."""
    packaged = Path(str(resources.files("advisor"))) / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / name


@cache
def envelope_parser() -> Lark:
    return _lalr_parser("envelope.lark")


@cache
def message_parser() -> Lark:
    return _lalr_parser("messages.lark")


def _lalr_parser(file_name: str) -> Lark:
    """The LALR parser of a grammar file, its tables loaded from the user's cache when built before:
    building them takes longer than analysing a small log (lark checks the grammar's hash on load)."""
    grammar = (data_dir("grammars") / file_name).read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", cache=_cache_file(grammar) or False)


def _cache_file(grammar: str) -> str | None:
    """A file for the parser tables in $XDG_CACHE_HOME/vllm-advisor, or None where none can be made.

    Named by the grammar's and lark's versions, so installed versions of the advisor never share one.
    """
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(home) / "vllm-advisor"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home, a sandbox: build the tables every time
        return None
    digest = hashlib.sha256(f"{lark.__version__}\n{grammar}".encode()).hexdigest()[:16]
    return str(folder / f"grammar-{digest}.lark-tables")


@cache
def anchor_terminals() -> tuple[tuple[str, str], ...]:
    """(name, regular expression) of each anchor terminal (A_*): the words a message can start with."""
    return tuple((t.name, t.pattern.to_regexp()) for t in message_parser().terminals if t.name.startswith("A_"))


def anchor_patterns() -> tuple[str, ...]:
    return tuple(pattern for _, pattern in anchor_terminals())


@cache
def anchor_regex() -> re.Pattern:
    """All anchors in one pattern; the name of the group that matched is the anchor's terminal."""
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in anchor_terminals()))


@cache
def anchor_words() -> tuple[str, ...]:
    """Words of which every anchor match holds one: string anchors, and REGEX_ANCHOR_LITERALS."""
    words: list[str] = []
    for terminal in message_parser().terminals:
        if terminal.name.startswith("A_"):
            is_string = terminal.pattern.type == "str"
            words.extend([terminal.pattern.value] if is_string else REGEX_ANCHOR_LITERALS[terminal.name])
    return tuple(dict.fromkeys(words))


# Text from which find_anchor searches anchor by anchor: the one regex of all anchors tries each
# of them at every character (about 1.5 µs a character), each anchor alone skips to its own words.
LONG_TEXT = 1024


@cache
def anchor_searches() -> tuple[re.Pattern, ...]:
    return tuple(re.compile(pattern) for pattern in anchor_patterns())


def find_anchor(text: str, position: int = 0) -> re.Match | None:
    """anchor_regex().search(text, position), quicker on long text (a 60 KB line: 0.1 s before).

    Where no anchor word is left there is no anchor. In long text each anchor is searched alone
    and the regex of all of them matched where the first one starts: the same match, as an
    alternation matches at the first place where one of its branches does.
    """
    if not any(text.find(word, position) >= 0 for word in anchor_words()):
        return None
    if len(text) - position <= LONG_TEXT:
        return anchor_regex().search(text, position)
    starts = [found.start() for search in anchor_searches() if (found := search.search(text, position))]
    return anchor_regex().match(text, min(starts)) if starts else None


class Envelope:
    """What the envelope grammar found: process tag, level, source file, and where the body starts."""

    __slots__ = ("process", "level", "body")

    def __init__(self, process: str | None, level: str | None, body: str):
        self.process, self.level, self.body = process, level, body


def _lark_parse(parser: Lark, text: str) -> Tree:
    return parser.parse(text)


def split_envelope(text: str, parse=_lark_parse) -> Envelope:
    try:
        tree = parse(envelope_parser(), text)
    except LarkError:
        return Envelope(None, None, text.strip())
    process = level = None
    body = ""
    for child in tree.children:
        if isinstance(child, Token) and child.type == "BODY":
            body = str(child)
        elif child.data == "tag" and process is None:
            process = str(child.children[0]).lstrip("(").rstrip(")").rstrip(":")
        elif child.data in ("vllm_header", "uvicorn_header"):
            level = str(child.children[0]).rstrip(":")
    return Envelope(process, level, body.rstrip())


def parse_line(text: str, line: int, parse=_lark_parse) -> list[Fact]:
    """Every fact a line states, in order. Lines without an anchor cost one regex search.

    `parse(parser, text) -> Tree` runs a Lark parser; advisor.templates passes a caching one.
    """
    if not find_anchor(text):
        return []
    envelope = split_envelope(text, parse)
    facts: list[Fact] = []
    for kind, values, words, args in messages(envelope.body, parse):
        facts.append(Fact(kind=kind, line=line, values=values, text=words, args=args,
                          process=envelope.process, level=envelope.level))
    return facts


def messages(body: str, parse=_lark_parse):
    """Yield (kind, values, text, args) for each message found in a line's body."""
    position, attempts = 0, 0
    while (match := find_anchor(body, position)) is not None and attempts < MAX_ANCHORS_PER_LINE:
        start, attempts = match.start(), attempts + 1
        if match.lastgroup in STRUCTURAL_ANCHORS and body[:start].strip():
            position = start + 1
            continue
        try:
            tree = parse(message_parser(), body[start:])
        except LarkError:
            position = start + 1
            continue
        message, rest = tree.children[0], _rest(tree)
        kind = message.data if isinstance(message, Tree) else "unknown"
        parts = ToFacts().transform(message) or {}
        words = dict(parts.get("text", {}))
        if kind == "exception":
            words["message"] = (rest.lstrip(":( ") if rest else "")[:500]
        yield str(kind), parts.get("values", {}), words, parts.get("args", {})
        if rest is None:
            return
        position = len(body) - len(rest)  # REST is the suffix of the body after this message


def _rest(tree: Tree) -> str | None:
    last = tree.children[-1]
    return str(last) if isinstance(last, Token) and last.type == "REST" else None
