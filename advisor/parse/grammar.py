"""The Lark grammars: split a line into its envelope and body, and find the messages in the body."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
from lark.lexer import TerminalDef

from advisor.parse.facts import Fact, Number
from advisor.parse.messages import ToFacts, refused

# Facts about the shape of a traceback count only where they start the line's body;
# elsewhere "ValueError" or 'File "' is just a word inside a sentence.
# The level of a record that is a fact whatever its message says (see parse_line).
CRITICAL = "CRITICAL"
ERROR = "ERROR"
STRUCTURAL_ANCHORS = {"A_TRACEBACK", "A_FILE", "A_IPYTHON_FILE", "A_COLAB_FILE", "A_EXCEPTION", "A_WEIGHT_KERNEL"}
# Real lines state a few messages; a hostile one full of anchors must not cost a parse per anchor.
MAX_ANCHORS_PER_LINE = 32
# The kind of the mark a message leaves when the end of its line cuts it short (see advisor.parse.continuation).
CUT = "cut"
# The facts a line's envelope gives when the grammar reads none of its words (parse_line).
RECORD_KINDS = frozenset({"error_record", "critical_record"})


def data_dir(name: str) -> Path:
    """A data folder shipped in the wheel (advisor/data/grammars), or the repository's top-level one."""
    packaged = Path(str(resources.files("advisor"))) / "data" / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / name


# A note on the terminal defined below it, in a grammar file: `// KEY: JSON`.
NOTE = re.compile(r"^// ([a-z-]+): (.+)$")
TERMINAL = re.compile(r"^([A-Z][A-Z0-9_]*)(?:\.-?\d+)?\s*:")


@cache
def terminal_notes(key: str) -> dict[str, Any]:
    """The notes of one key on the grammars' terminals, by terminal name. A regex anchor's `literals`
    are words of which every match holds one (the prefilter looks for them in raw bytes, find_anchor
    in a line's text); a `digit-sensitive` terminal tells one digit from another, and its note is a
    digit-uniform regex finding every line where it could match (those lines bypass the shape cache)."""
    notes: dict[str, Any] = {}
    for path in sorted(data_dir("grammars").glob("*.lark")):
        pending: dict[str, Any] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if note := NOTE.match(line):
                pending[note[1]] = json.loads(note[2])
            elif terminal := TERMINAL.match(line):
                if key in pending:
                    notes[terminal[1]] = pending[key]
                pending = {}
    return notes


@cache
def envelope_parser() -> Lark:
    return _lalr_parser("envelope.lark")


@cache
def message_parser() -> Lark:
    return _lalr_parser("messages.lark")


def _lalr_parser(file_name: str) -> Lark:
    """The LALR parser of a grammar file, its tables loaded from the user's cache when built before:
    building them takes longer than analysing a small log (lark checks the grammar's hash on load)."""
    grammar = (data_dir("grammars") / file_name).read_text(encoding="utf-8")
    cache_file = _cache_file(grammar)
    if cache_file is not None:
        try:
            with open(cache_file, "rb") as saved:
                return Lark.load(saved)
        except Exception:  # missing, cut short, or not lark's: built again below and saved anew
            pass
    parser = Lark(grammar, parser="lalr", lexer="contextual")
    if cache_file is not None:
        _save(parser, cache_file)
    return parser


def _save(parser: Lark, cache_file: str) -> None:
    # Written aside and renamed into place: advisors started together (pre-commit runs several)
    # never read tables another is still writing.
    part = f"{cache_file}.{os.getpid()}.part"
    try:
        with open(part, "wb") as out:
            parser.save(out)
        os.replace(part, cache_file)
    except OSError:  # a full or read-only cache: the tables are built again next time
        with contextlib.suppress(OSError):
            os.unlink(part)


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


@cache
def anchor_regex() -> re.Pattern[str]:
    """All anchors in one pattern; the name of the group that matched is the anchor's terminal."""
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in anchor_terminals()))


@cache
def anchor_words() -> tuple[str, ...]:
    """Words of which every anchor match holds one: string anchors, and a regex anchor's literals."""
    words = [
        word
        for terminal in message_parser().terminals
        if terminal.name.startswith("A_")
        for word in _words_of(terminal)
    ]
    return tuple(dict.fromkeys(words))


def _words_of(anchor: TerminalDef) -> tuple[str, ...]:
    """The words of which every match of an anchor terminal holds one."""
    return (anchor.pattern.value,) if anchor.pattern.type == "str" else tuple(terminal_notes("literals")[anchor.name])


@cache
def anchor_word_regex() -> re.Pattern[str]:
    """One search for any anchor word: where none is, no anchor is either."""
    return re.compile("|".join(re.escape(word) for word in anchor_words()))


@cache
def anchor_searches() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """Each anchor's own pattern, with the words of which every match of it holds one."""
    return tuple(
        (re.compile(terminal.pattern.to_regexp()), _words_of(terminal))
        for terminal in message_parser().terminals
        if terminal.name.startswith("A_")
    )


@cache
def anchor_of_word() -> tuple[tuple[str, int], ...]:
    """Each anchor word, with the index of its anchor in anchor_searches(): one pass over the words
    finds every anchor a text may hold."""
    return tuple((word, index) for index, (_, words) in enumerate(anchor_searches()) for word in words)


def find_anchor(text: str, position: int = 0) -> re.Match[str] | None:
    """anchor_regex().search(text, position), about four times quicker (see AnchorSearch)."""
    return AnchorSearch(text).find(position)


class AnchorSearch:
    """The anchors of one text, found from ever later places: anchor_regex().search, quicker.

    The regex of all anchors tries each of them at every character (about 1.5 microseconds a character).
    Instead, each anchor whose words the text holds is searched alone, and the regex of all of
    them matched where the first one starts: the same match, as an alternation matches at the
    first place where one of its branches does. Each anchor's next start is kept, so a line's
    messages, found one after another, search its text once.
    """

    __slots__ = ("starts", "text")

    def __init__(self, text: str):
        self.text = text
        self.starts: dict[int, int] | None = None  # the next start of each anchor whose words the text holds

    def find(self, position: int = 0) -> re.Match[str] | None:
        text = self.text
        if anchor_word_regex().search(text, position) is None:
            return None
        if self.starts is None:
            # An anchor none of whose words the text holds matches nowhere in it.
            self.starts = {anchor: -1 for word, anchor in anchor_of_word() if word in text}
        starts, searches = self.starts, anchor_searches()
        for index, start in starts.items():
            if start < position:
                found = searches[index][0].search(text, position)
                starts[index] = found.start() if found else len(text)
        first = min(starts.values(), default=len(text))
        return anchor_regex().match(text, first) if first < len(text) else None


class Envelope:
    """What the envelope grammar found: process tag, level, source file, and where the body starts."""

    __slots__ = ("body", "level", "process", "source")

    def __init__(self, process: str | None, level: str | None, body: str, source: str | None = None):
        self.process, self.level, self.body, self.source = process, level, body, source


# How a line is parsed: a Lark parser run on text (advisor.fast.templates passes one that caches its trees).
# Tree[Any]: the grammar, not the type, says which children are trees and which are tokens.
Parse = Callable[[Lark, str], Tree[Any]]


def _lark_parse(parser: Lark, text: str) -> Tree[Token]:
    return parser.parse(text)


def split_envelope(text: str, parse: Parse = _lark_parse) -> Envelope:
    try:
        tree = parse(envelope_parser(), text)
    except LarkError:
        return Envelope(None, None, text.strip())
    process = level = source = None
    body = ""
    for child in tree.children:
        if isinstance(child, Token) and child.type == "BODY":
            body = str(child)
        elif child.data == "tag" and process is None:
            process = str(child.children[0]).lstrip("(").rstrip(")").rstrip(":")
        elif child.data in ("vllm_header", "uvicorn_header"):
            level = str(child.children[0]).rstrip(":")
            fileinfo = next((str(t) for t in child.children if getattr(t, "type", "") == "FILEINFO"), None)
            source = fileinfo.strip("[]").rsplit("/", 1)[-1] if fileinfo else None
    return Envelope(process, level, body.rstrip(), source)


@cache
def _stages_json() -> dict[str, Any]:
    stages: dict[str, Any] = json.loads(resources.files("advisor").joinpath("stages.json").read_text(encoding="utf-8"))
    return stages


# Frames the stage map cannot place and the timeline still reads: other packages' that name a stage
# (torch.cuda.graph's capture, the device context that creates a model's tensors, the web stack's
# handling of a request), and vLLM's checks of one request's input, which reject that request alone.
FOREIGN_STAGES = {
    "capture_begin": "graph_capture",
    "capture_end": "graph_capture",
    "__torch_function__": "model_init",
    # FastAPI's call of a route's endpoint, Starlette's wrapper of a request's handling and uvicorn's
    # cycle of one HTTP request: a traceback through them is a request's, so the server was listening.
    "run_endpoint_function": "serving",
    "wrapped_app": "serving",
    "run_asgi": "serving",
    # verl's rollout worker, the RL trainers' way of running vLLM's generation (Ray's WorkerDict).
    "generate_sequences": "serving",
}
REQUEST_VALIDATORS = frozenset({"_validate_model_inputs", "_validate_model_input", "_validate_input"})
# A worker runs what its executor asks for by name (collective_rpc, V0's execute_method): the vLLM
# frame right inside the dispatcher is the method asked for. Start-up asks for loading, profiling
# and capture by their own names (V0's profile_run calls execute_model directly, not through one);
# only serving asks for a model step.
RPC_DISPATCHERS = frozenset({"worker_busy_loop", "_execute_worker_rpc", "execute_method", "run_method"})
SERVING_RPCS = frozenset({"execute_model", "sample_tokens"})
# Wrappers a worker's RPC dispatcher may call through before the method it was asked to run.
PASS_THROUGH = frozenset({"decorate_context", "wrapper", "inner", "_wrapped_call_impl", "_call_impl"})


@cache
def staged_functions() -> frozenset[str]:
    """Every function a frame may name that says where it ran (advisor/stages.json and the frames the
    timeline reads besides: an RPC's dispatcher, the wrappers it calls through, the method it ran):
    a frame naming one is whole."""
    placed = frozenset(name for names in _stages_json()["stages"].values() for name in names)
    return placed | FOREIGN_STAGES.keys() | REQUEST_VALIDATORS | RPC_DISPATCHERS | SERVING_RPCS | PASS_THROUGH


def logged_at() -> dict[str, str]:
    """The stage of the vLLM function behind each error-level logger call, by the "file.py:line" its
    records print (advisor/stages.json, from every release's source)."""
    logged: dict[str, str] = _stages_json()["logged_at"]
    return logged


# The words an error record's [file:line] gives it, by the list of places in advisor/stages.json:
# "answered", a `logger.exception` call in an `except` block that returns (a request handler logging the
# traceback of the error it answers the client with); "one_request", an error-level call on the API
# server's request path (its handlers, the tool-call and reasoning parsers): one request's error.
PLACED_WORDS = {"answered": "answered_at", "one_request": "one_request_at"}


@cache
def _places(name: str) -> frozenset[str]:
    return frozenset(_stages_json()[name])


# A line whose facts depend on the digits of its [file:line] (logged_stage): an error-level record
# with a source. Digit-uniform, for advisor.fast.templates, which parses such lines every time.
LOCATED_ERROR = re.compile(r"(?:ERROR|CRITICAL) [^\[\]]{0,40}?\[?[\w.\-/]+\.py:\d+\]")


def logged_stage(envelope: Envelope) -> str:
    """The stage an error record was logged in, from its [file:line]; "" when unknown."""
    if envelope.source is None or envelope.level not in (ERROR, CRITICAL):
        return ""
    return logged_at().get(envelope.source, "")


# The OpenAI server's request ids (vllm/entrypoints/openai: "chatcmpl-" and "cmpl-" then a uuid's hex, V1's
# engine adds "-0"): an error that names one happened to a request the server had taken in.
REQUEST_ID = re.compile(r"\b(?:chat)?cmpl-[0-9a-f]{16}")


def names_a_request(envelope: Envelope) -> bool:
    """Whether an error record names a request the server took in (a serving sign)."""
    return envelope.level in (ERROR, CRITICAL) and "cmpl-" in envelope.body and bool(REQUEST_ID.search(envelope.body))


def placed_words(envelope: Envelope) -> dict[str, str]:
    """The words an error record's [file:line] gives it (see PLACED_WORDS)."""
    if envelope.source is None or envelope.level != ERROR:
        return {}
    return {word: "yes" for word, places in PLACED_WORDS.items() if envelope.source in _places(places)}


def may_state_facts(text: str) -> bool:
    """Whether a line can state a fact: it holds an anchor, or it may be an error-level record."""
    return CRITICAL in text or ERROR in text or find_anchor(text) is not None


def parse_line(text: str, line: int, parse: Parse = _lark_parse) -> list[Fact]:
    """Every fact a line states, in order. Lines without an anchor cost one regex search.

    `parse(parser, text) -> Tree` runs a Lark parser; advisor.fast.templates passes a caching one.
    """
    if not may_state_facts(text):
        return []
    envelope = split_envelope(text, parse)
    logged_in = logged_stage(envelope)
    placed = placed_words(envelope)
    request = names_a_request(envelope)
    facts: list[Fact] = []
    for kind, values, words, args in messages(joined_fragments(envelope.body), parse):
        if logged_in:
            words = {**words, "logged_in": logged_in}
        if request:
            words = {**words, "request": "named"}
        if placed:
            words = {**words, **placed}
        facts.append(
            Fact(
                kind=kind,
                line=line,
                values=values,
                text=words,
                args=args,
                process=envelope.process,
                level=envelope.level,
            )
        )
    nothing_read = all(fact.kind == CUT for fact in facts)
    if nothing_read and envelope.level == CRITICAL:
        # vLLM logs CRITICAL only when it gives up: whatever its words, a record of its own.
        words = {"message": envelope.body[:500]}
        facts.append(Fact(kind="critical_record", line=line, text=words, process=envelope.process, level=CRITICAL))
    elif nothing_read and own_error_record(envelope, text):
        # An error vLLM logged in words the grammar does not know ("WorkerProc hit an exception."), or
        # cut inside words it knows ("EngineCore hit an exc"): it fails nothing by itself, but a log
        # that ends in one did not end well.
        words = {"message": envelope.body[:500]}
        if logged_in:
            words["logged_in"] = logged_in
        words.update(placed)
        facts.append(Fact(kind="error_record", line=line, text=words, process=envelope.process, level=ERROR))
    return facts


def own_error_record(envelope: Envelope, text: str) -> bool:
    """Whether a line is an ERROR record of vLLM's logger ([file.py:N]) in its own words: not one of
    the indented lines of a traceback that the same logger call printed, nor an empty one."""
    if envelope.level != ERROR or envelope.source is None or not envelope.body[:1].isalnum():
        return False
    start = len(text.rstrip()) - len(envelope.body)
    return text[start - 2 : start] != "  "


# An exception raised with several strings, RuntimeError("a ", f"b {x}. ", "c."), prints them as a
# tuple: ('a ', 'b 80. ', 'c.'). Bounded repeats keep the search linear on hostile lines.
FRAGMENTS = re.compile(r"\('[^'\\]{0,500}'(?:, '[^'\\]{0,500}'){1,16}\)")
FRAGMENT = re.compile(r"'([^'\\]*)'")


def joined_fragments(body: str) -> str:
    """The body with each tuple of string fragments read as the one sentence it stands for."""
    if "', '" not in body:
        return body
    return FRAGMENTS.sub(lambda found: "".join(FRAGMENT.findall(found[0])), body)


def messages(
    body: str, parse: Parse = _lark_parse
) -> Iterator[tuple[str, dict[str, Number], dict[str, str], dict[str, Any]]]:
    """Yield (kind, values, text, args) for each message found in a line's body."""
    position, attempts, anchors = 0, 0, AnchorSearch(body)
    while (match := anchors.find(position)) is not None and attempts < MAX_ANCHORS_PER_LINE:
        start, attempts = match.start(), attempts + 1
        if match.lastgroup in STRUCTURAL_ANCHORS and body[:start].strip():
            position = start + 1
            continue
        try:
            tree = parse(message_parser(), body[start:])
        except LarkError as error:
            if not _cut_by_the_end(error, body[start:]):
                position = start + 1
                continue
            clauses = _complete_clauses(body[start:], parse)
            yield CUT, {}, {}, {}
            if clauses is None:
                position = start + 1
                continue
            tree = clauses
        message, rest = tree.children[0], _rest(tree)
        kind = message.data if isinstance(message, Tree) else "unknown"
        parts = ToFacts().transform(message) or {}
        words = dict(parts.get("text", {}))
        if kind == "exception":
            words["message"] = (rest.lstrip(":( ") if rest else "")[:500]
        elif kind == "config_value_error":  # pydantic's detail: the message, without its [type=...] note
            words["message"] = (rest or "").split(" [type=")[0].strip()[:500]
        if "message" in words and (settings := refused(words["message"])):
            words["refuses"] = settings
        yield str(kind), parts.get("values", {}), words, parts.get("args", {})
        if words.get("cut"):  # arguments a line's end cut: the next rows may hold the rest
            yield CUT, {}, {}, {}
        if kind == "stats" and not body.rstrip().endswith(STATS_END):
            yield CUT, {}, {}, {}  # every stats line ends on a percentage: a terminal wrapped this one
        if rest is None:
            if _goes_on(kind, words, body):
                yield CUT, {}, {}, {}
            return
        position = len(body) - len(rest)  # REST is the suffix of the body after this message
    if ends_inside_words(body):
        yield CUT, {}, {}, {}


def _goes_on(kind: str, words: Mapping[str, str], body: str) -> bool:
    """Whether a message that runs to its line's end may go on in the next line: a wrap may have cut its
    last number ("... length is 1" of "15488") or its frame's function ("output_hand" of "output_handler");
    a typed command goes on where a trailing backslash says so (its flags end in whole numbers)."""
    if kind == "launch_command":
        return body.rstrip().endswith("\\")
    return body[-1:].isdigit() or (kind == "frame" and words.get("function") not in staged_functions())


# A line that ends inside a message's words ends on at least this much of them, a whole word
# at least ("max" of "max seq len ("): shorter tails end too many lines that continue nothing.
MIN_WORDS_TAIL = 3


@cache
def word_starts() -> tuple[frozenset[str], int]:
    """Every proper beginning, MIN_WORDS_TAIL characters or more, of the grammar's words (the anchors'
    and the other string terminals'), and the longest of them."""
    words = set(anchor_words()) | set(literal_terminals().values())
    # A whole word ("Error" of "500 Internal Server Error") is no word cut short.
    starts = frozenset(word[:end] for word in words for end in range(MIN_WORDS_TAIL, len(word))) - words
    return starts, max(map(len, starts), default=0)


def ends_inside_words(body: str) -> bool:
    """Whether the text ends on the first part of the grammar's words: "... with the model's max seq"
    cut by a terminal's wrap before " len (32768)", or ". Based on the av" before "ailable memory"."""
    starts, longest = word_starts()
    # A word begins where the text before it is no letter or digit, or it begins with a space itself
    # (" out of memory." follows "CUDA").
    return any(
        body[-size:] in starts and (size == len(body) or not body[-size - 1].isalnum() or not body[-size].isalnum())
        for size in range(MIN_WORDS_TAIL, min(len(body), longest) + 1)
    )


# How every periodic stats line of every release ends: "... CPU KV cache usage: 0.0%." (V0),
# "... Prefix cache hit rate: 0.0%" (V1).
STATS_END = ("%", "%.")
# Where a message's optional clauses begin: a line cut inside one still states the clauses before it.
CLAUSE_END = re.compile(r"[.,;]\s|\s\(")
# The longest last word of a line that a wrap may have cut out of the grammar's words ("Pending" of
# "Pending: 3 reqs").
MAX_CUT_WORD = 40
# The tail a wrap leaves of a clause: a few words ("Pend" of "Pending: 3", "Avg genera" of "Avg
# generation throughput: 538.3", "109.81 Mi" of "109.81 MiB is free", "Prefix cache hit ra" of the four words
# of V1's longest stats label).
CUT_WORDS = re.compile(r"\S+(?: \S+){0,3}")
# How many clauses back from the cut a message is tried again.
MAX_CLAUSES_BACK = 3


def _complete_clauses(text: str, parse: Parse) -> Tree[Any] | None:
    """The message a cut line states in its complete clauses: "CUDA out of memory. Tried to allocate
    426.00 MiB. GPU " read as far as "MiB", the longest such text that parses, or None."""
    ends = [m.start() for m in CLAUSE_END.finditer(text)][-MAX_CLAUSES_BACK:]
    for end in reversed(ends):
        try:
            return parse(message_parser(), text[:end])
        except LarkError:
            continue
    return None


def _cut_by_the_end(error: LarkError, text: str) -> bool:
    """Whether a message failed only because its text ended: at the end, or inside a word it expected."""
    if isinstance(error, UnexpectedEOF):
        return True
    if isinstance(error, UnexpectedToken):
        if error.token.type == "$END":
            return True
        at, expected = error.token.start_pos, error.expected
    elif isinstance(error, UnexpectedCharacters):
        at, expected = error.pos_in_stream, error.allowed
    else:
        return False
    rest = text[at:].rstrip()
    if rest and len(rest) <= MAX_CUT_WORD and CUT_WORDS.fullmatch(rest):
        return True  # the line ends on words the grammar did not expect: the start of longer ones
    words = literal_terminals()
    return bool(rest) and any(
        len(words.get(name, "")) > len(rest) and words[name].startswith(rest) for name in expected
    )


@cache
def literal_terminals() -> dict[str, str]:
    """The words of the message grammar's string terminals, by terminal name."""
    return {t.name: t.pattern.value for t in message_parser().terminals if t.pattern.type == "str"}


def _rest(tree: Tree[Any]) -> str | None:
    last = tree.children[-1]
    return str(last) if isinstance(last, Token) and last.type == "REST" else None
