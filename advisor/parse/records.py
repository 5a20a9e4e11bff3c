"""vLLM log records known by their envelope alone: the fact a log shows when the grammar knows none
of its messages, so that a vLLM log is never "no vLLM log lines recognised"."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from advisor.ingest.sources import Line
from advisor.ingest.unwrap import PROCESS_RANKS
from advisor.parse.envelope import CRITICAL, ERROR
from advisor.parse.facts import Fact
from advisor.parse.places import logged_at

# vLLM's own log format (vllm/logger.py): "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]
# %(message)s" with the date as "%m-%d %H:%M:%S" (0.8 on; before, "filename:lineno]" without the
# bracket), after the process tag its multiprocessing workers add; and the API server's uvicorn
# access lines for vLLM's routes.
# A record is found anywhere in a line, after whatever a shipper or a paste put before it (a process
# tag too: the record's own level and [file:line] are looked for first).
LEVELLED = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d(?::\d\d(?:\.\d+)?)? "
    r"\[?(?P<source>[\w.\-/]+\.py):(?P<lineno>\d+)\]"
)
OTHER_RECORD = re.compile(
    r"INFO: +\S+ - \"(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) "
    r"/(?:v1/|health|metrics|tokenize|detokenize|ping|version|load|pooling|score|rerank|invocations"
    # TRL's `vllm-serve`, a vLLM server for a trainer's rollouts, syncing the trainer's weights into it
    r"|update_named_param|batch_update_named_params|init_communicator|close_communicator|get_world_size)"
    # the process tags vLLM's own processes print before their lines, whatever follows
    r"|\((?P<process>EngineCore|APIServer|VllmWorker|Worker_|RayWorkerWrapper|DPEngineCoreActor)[\w\-]*"
    rf"{PROCESS_RANKS} pid=\d+"
    # vLLM's loggers under a host's own format (Xinference's "%(name)s %(process)d %(levelname)s", Python's
    # default "%(levelname)s:%(name)s:"): a logger named for a module of vLLM's package
    r"|(?P<logger>\bvllm(?:\.\w+)+)(?: +\d+)? +(?P<logger_level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\b"
    r"|\b(?P<default_level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<default_logger>vllm(?:\.\w+)+):"
)
# uvicorn's access line for a request the server answered (2xx) on one of vLLM's inference routes: a server
# that answers had got ready. Only the head is searched: a busy log holds one per request, too many to
# parse each, and only an excerpt without a start needs the sign (the grammar reads 4xx and 5xx lines).
ANSWERED = re.compile(
    r"INFO: +\S+ - \"(?:GET|POST) /(?:v1/(?:chat/completions|completions|embeddings|responses|messages|audio"
    r"|score|rerank)|generate|pooling|score|rerank|classify|invocations)\S* HTTP/[\d.]+\" 2\d\d\b"
)
# Where the first record is looked for: a vLLM log shows one within its first lines.
HEAD_LINES = 2000
# How much of a log read once (stdin, a pipe) is kept for its head's facts (with_head).
HEAD_BYTES = 1 << 20
# The kinds that are no evidence by themselves that a log is vLLM's (a Python traceback).
NOT_EVIDENCE = {"traceback_start", "frame", "serving_call", "exception_chain", "exception"}


def first_record(lines: Iterable[Line], errors: bool = False) -> Fact | None:
    """The first line of the head of a log that is a vLLM record, as a fact (`errors`: an error-level
    record as the error record it is)."""
    for line in itertools.islice(lines, HEAD_LINES):
        if found := LEVELLED.search(line.text):
            source = found["source"].rsplit("/", 1)[-1]
            if errors and found["level"] in (ERROR, CRITICAL):
                # An excerpt that starts inside a record vLLM logged as an error (a traceback's lines, a
                # tensor it printed): the error record, placed by its [file:line] as parse_line places one.
                words = {"message": line.text[found.end() :].strip()[:500]}
                if stage := logged_at().get(f"{source}:{found['lineno']}"):
                    words["logged_in"] = stage
                return Fact(kind="error_record", line=line.number, text=words, level=ERROR)
            return Fact(kind="vllm_record", line=line.number, text={"source": source}, level=found["level"])
        if found := OTHER_RECORD.search(line.text):
            source = found["process"] or found["logger"] or found["default_logger"] or "uvicorn access log"
            level = found["logger_level"] or found["default_level"] or "INFO"
            return Fact(kind="vllm_record", line=line.number, text={"source": source}, level=level)
    return None


def keeping_head(chunks: Iterable[bytes | bytearray], head: list[bytes]) -> Iterator[bytes | bytearray]:
    """The chunks of a log read once, a copy of the first HEAD_BYTES of them kept in `head`."""
    kept = 0
    for chunk in chunks:
        if kept < HEAD_BYTES:
            head.append(bytes(chunk))  # a reader may reuse its buffer for the next chunk
            kept += len(chunk)
        yield chunk


def with_head(facts: list[Fact], lines: Iterable[Line]) -> list[Fact]:
    """The facts, with what the head of the log shows besides: the first request the server answered,
    and the log's first vLLM record when nothing else shows it is vLLM's."""
    head = list(itertools.islice(lines, HEAD_LINES))
    if answer := first_answer(head):
        facts = _inserted(facts, answer)
    if any(fact.kind not in NOT_EVIDENCE for fact in facts):
        return facts
    # A traceback read from the excerpt places its own error; a record's lines alone (a tensor it printed) do not.
    record = first_record(head, errors=not facts)
    return facts if record is None else _inserted(facts, record)


def first_answer(head: Iterable[Line]) -> Fact | None:
    """The first request the server answered, from its access line."""
    for line in head:
        if ANSWERED.search(line.text):
            return Fact(kind="request_answered", line=line.number)
    return None


def _inserted(facts: list[Fact], fact: Fact) -> list[Fact]:
    at = next((i for i, other in enumerate(facts) if other.line >= fact.line), len(facts))
    return [*facts[:at], fact, *facts[at:]]
