"""Sources and unwrap: each wrapper on real lines, line numbering, and no damage to vLLM's own lines."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from conftest import CORPUS, corpus_cases, fixture_line, fixture_path

from advisor import cli
from advisor.ingest import sources
from advisor.ingest.unwrap import clean, journal_message


def raw_line(name: str, number: int) -> str:
    """One physical line of a fixture exactly as stored, before any unwrapping."""
    return fixture_path(name).read_bytes().decode("utf-8").split("\n")[number - 1].rstrip("\r")


def texts(data: bytes) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in sources.lines([data])]


# The wrapped files of the corpus: (fixture, line, the wrapper as it appears in front of vLLM's text).
REAL_WRAPPED = [
    ("056", 1, "Aug 19 18:01:03 vllm vllm[7704]: "),  # journalctl short
    ("056", 9, "Aug 19 18:01:05 vllm vllm[7704]: "),
    ("015", 3, "vllm-1  | "),  # docker compose, numbered service
    ("037", 2, "vllm  | "),  # docker compose v1 style service name
    ("050", 3, "2024-09-13T22:25:41,496 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "),  # TorchServe
    ("022", 1, "[2026-02-24T20:21:58Z] "),  # CI runner timestamp
    ("008", 7, "2026-05-20 00:55:15,994 xinference.core.worker 155 ERROR    "),  # Xinference re-logging vLLM
    ("072", 2, "2024-06-25 16:32:00,563 xinference.api.restful_api 3118895 ERROR    "),
    ("016", 3, "2024-04-27 10:13:05 | ERROR | stderr | "),  # FastChat (QAnything)
]


@pytest.mark.parametrize(("name", "number", "wrapper"), REAL_WRAPPED, ids=lambda v: str(v)[:12])
def test_real_wrapper_is_removed(name, number, wrapper):
    raw = raw_line(name, number)
    assert raw.startswith(wrapper)
    assert fixture_line(name, number) == raw.removeprefix(wrapper)


def test_rsyslog_escaped_colour_codes_are_removed():
    # rsyslog writes a control character as "#" and its three octal digits: ESC is "#033".
    raw = raw_line("34015", 1)
    assert "#033[1;36m" in raw
    assert fixture_line("34015", 1).startswith("(VllmWorker rank=3 pid=140343) OSError: ")


def test_k9s_box_frame_is_removed():
    raw = raw_line("058", 5)
    assert raw.startswith("│ ") and raw.endswith("│")
    assert fixture_line("058", 5) == "INFO 03-21 20:15:46 [executor_base.py:111] # cuda blocks: 7191, # CPU blocks: 512"


@pytest.mark.parametrize(("name", "number"), [("064", 1), ("067", 1), ("077", 2), ("081", 7)])
def test_ray_process_tag_is_kept(name, number):
    raw = raw_line(name, number)
    assert "RayWorkerWrapper pid=" in raw
    assert fixture_line(name, number) == raw.removesuffix(" [repeated 6x across cluster]")


def test_ray_repeated_suffix_is_removed():
    assert raw_line("067", 2).endswith(" [repeated 30x across cluster]")
    assert fixture_line("067", 2) == (
        "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 "
        "[worker.py:267] Memory profiling takes 4.26 seconds"
    )


def test_plain_logs_pass_through_unchanged():
    # The false-positive guard: no line vLLM (or uvicorn, Python, NCCL) printed may look like a wrapper.
    plain = [c["file"].split("/")[-1] for c in corpus_cases() if c["wrapper"] == "plain"]
    assert len(plain) > 30
    for name in plain:
        for number, raw in enumerate((CORPUS / name).read_bytes().decode("utf-8").split("\n"), 1):
            raw = raw.rstrip("\r")
            if "\r" not in raw:
                assert clean(raw) == raw, f"{name}:{number}"


@pytest.mark.parametrize(
    "line",
    [
        "INFO 03-01 10:30:42 cuda.py:230] Using FlashAttention backend.",
        raw_line("089", 230),  # uvicorn access log: INFO:     127.0.0.1:41604 - "POST ...
        raw_line("043", 1),
        raw_line("081", 6),
    ],
)
def test_vllm_line_is_not_mangled(line):
    assert clean(line) == line.removesuffix(" [repeated 6x across cluster]")


VLLM = "(EngineCore pid=7704) INFO 08-19 18:01:04 [gpu_worker.py:563] Available KV cache memory: 26.51 GiB"


@pytest.mark.parametrize(
    "wrapper",
    [
        "Nov 29 09:50:01 gpu-node-3 vllm[1234]: ",  # journalctl short
        "Nov  9 09:50:01 gpu-node-3 vllm[1234]: ",  # space-padded day
        "Nov 29 09:50:01 gpu-node-3 bash[1893]: ",
        "Nov 29 09:50:01 gpu-node-3 python3[2211]: ",
        "Nov 29 09:50:01 gpu-node-3 vllm: ",  # identifier without pid
        "Mär 03 09:50:01 gpu-node-3 vllm[1234]: ",  # German
        "déc. 03 09:50:01 gpu-node-3 vllm[1234]: ",  # French
        "dic 03 09:50:01 gpu-node-3 vllm[1234]: ",  # Spanish
        "11月 29 09:50:01 gpu-node-3 vllm[1234]: ",  # Japanese
        "Nov 29 09:50:01.123456 gpu-node-3 vllm[1234]: ",  # short-precise
        "2026-11-29T09:50:01+0100 gpu-node-3 vllm[1234]: ",  # short-iso
        "2026-11-29T09:50:01+01:00 gpu-node-3 vllm[1234]: ",  # short-iso, systemd >= 254
        "2026-11-29T09:50:01.123456+01:00 gpu-node-3 vllm[1234]: ",  # short-iso-precise
        "vllm-1  | ",  # docker compose
        "\x1b[36mvllm-1  | \x1b[0m",  # docker compose, coloured
        "vllm_1       | ",  # docker-compose v1, padded
        "2026-11-29T09:50:01.123456789Z ",  # kubectl logs --timestamps, docker logs -t
        "[pod/vllm-7d9f8b6c4-x2k9p/vllm] ",  # kubectl logs --prefix
        "[pod/vllm-7d9f8b6c4-x2k9p/vllm] 2026-11-29T09:50:01.123456789Z ",  # --prefix --timestamps
        "vllm-1  | Nov 29 09:50:01 gpu-node-3 vllm[1234]: ",  # compose around journalctl
    ],
)
def test_wrapper_is_removed(wrapper):
    assert clean(wrapper + VLLM) == VLLM


@pytest.mark.parametrize(
    "coloured",
    [
        "(EngineCore pid=7704) \x1b[32mINFO\x1b[0m 08-19 18:01:04 [gpu_worker.py:563] "
        "Available KV cache memory: 26.51 GiB",
        "(EngineCore pid=7704) ^[[32mINFO^[[0m 08-19 18:01:04 [gpu_worker.py:563] Available KV cache memory: 26.51 GiB",
        "\x1b[36m(EngineCore pid=7704)\x1b[0m INFO 08-19 18:01:04 [gpu_worker.py:563] "
        "Available KV cache memory: 26.51 GiB",
        "\x1b]0;vllm serve\x07(EngineCore pid=7704) INFO 08-19 18:01:04 [gpu_worker.py:563] "
        "Available KV cache memory: 26.51 GiB",
        "(EngineCore pid=7704) INFO 08-19 18:01:04 [gpu_worker.py:563] Available KV\x00 cache memory: 26.51 GiB",
    ],
)
def test_colour_codes_and_nuls_are_removed(coloured):
    assert clean(coloured) == VLLM


def test_journal_json_message_forms():
    record = {"_HOSTNAME": "gpu-node-3", "SYSLOG_IDENTIFIER": "vllm", "MESSAGE": VLLM}
    assert journal_message(json.dumps(record)) == VLLM
    assert journal_message(json.dumps({**record, "MESSAGE": list(VLLM.encode())})) == VLLM
    assert journal_message(json.dumps({**record, "MESSAGE": list(b"bad \xff byte")})) == "bad \ufffd byte"
    assert journal_message(json.dumps({**record, "MESSAGE": None})) is None
    assert journal_message("\x1e" + json.dumps(record)) == VLLM  # -o json-seq


@pytest.mark.parametrize(
    "text",
    [
        VLLM,
        '{"MESSAGE": "unterminated',
        '{"message": "not journald"}',
        '["MESSAGE"]',
        "{'MESSAGE': 'a Python dict printed in a log'}",
    ],
)
def test_non_journal_lines_are_kept(text):
    assert journal_message(text) == text


def test_journal_json_keeps_line_numbers():
    records = [
        {"MESSAGE": "first"},
        {"MESSAGE": None},
        {"MESSAGE": list(b"\x1b[32mthird\x1b[0m")},
        {"MESSAGE": "fourth\nstill fourth"},
    ]
    data = "\n".join(json.dumps(r) for r in records).encode() + b"\n"
    assert texts(data) == [(1, "first"), (3, "third"), (4, "fourth"), (4, "still fourth")]


def test_line_endings_and_progress_bars():
    assert texts(b"one\r\ntwo\r\n") == [(1, "one"), (2, "two")]
    assert texts(b"10%\r50%\r100%\nnext") == [(1, "10%"), (1, "50%"), (1, "100%"), (2, "next")]


def test_invalid_utf8_never_crashes():
    assert texts(b"\xff\xfeGPU \xc3 blocks\n\xe2\x82") == [(1, "\ufffd\ufffdGPU \ufffd blocks"), (2, "\ufffd")]


def test_numbering_survives_chunk_borders():
    data = b"".join(f"Nov 29 09:50:01 host vllm[1]: line {n}\n".encode() for n in range(1, 501))
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    assert [(line.number, line.text) for line in sources.lines(chunks)] == [(n, f"line {n}") for n in range(1, 501)]


def test_gzip_and_plain_files_read_the_same(tmp_path):
    data = fixture_path("056").read_bytes()
    (tmp_path / "vllm.log.gz").write_bytes(gzip.compress(data))
    (tmp_path / "rotated.1").write_bytes(gzip.compress(data))  # gzip found by its magic, not its name
    plain = list(sources.lines(sources.read_chunks(str(fixture_path("056")))))
    for name in ("vllm.log.gz", "rotated.1"):
        assert list(sources.lines(sources.read_chunks(str(tmp_path / name)))) == plain


def test_journalctl_piped_to_stdin(monkeypatch, capsys):
    # `journalctl -u vllm | vllm-advisor`: the verdict points at the journal's own line number.
    wrapped = b"".join(
        b"Nov 29 09:50:01 gpu-node-3 vllm[1234]: " + line
        for line in fixture_path("001").read_bytes().splitlines(keepends=True)
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(wrapped)), encoding="utf-8"))
    assert cli.main(["--format", "json"]) == cli.EXIT_FAILURE
    report = json.loads(capsys.readouterr().out)
    assert (report["source"], report["verdict"]["failure"], report["verdict"]["line"]) == (
        "<stdin>",
        "kv_cache_insufficient",
        5,
    )


def test_several_files_are_each_reported(tmp_path, capsys):
    rotated = tmp_path / "vllm.log.1.gz"
    rotated.write_bytes(gzip.compress(fixture_path("001").read_bytes()))
    assert cli.main(["--format", "json", str(fixture_path("056")), str(rotated)]) == cli.EXIT_FAILURE
    reports = json.loads(capsys.readouterr().out)
    assert [(r["verdict"]["phase"], r["verdict"]["failure"]) for r in reports] == [
        ("healthy", "none"),
        ("startup", "kv_cache_insufficient"),
    ]


def test_what_unwrap_cuts_from_inside_a_line_is_named_for_the_fast_path():
    # The prefilter and the shape cache trust CUT_FROM_INSIDE to name every mark clean() cuts out.
    from advisor.ingest.unwrap import CUT_FROM_INSIDE, clean

    # each mark as it comes in a real line ("\ufffd[": an ESC a browser copy replaced)
    cut = {"\x1b": "\x1b[1m", "^[[": "^[[1m", "\ufffd[": "\ufffd[1;36m", "#033[": "#033[1;36m", "\x00": "\x00"}
    assert set(cut) == set(CUT_FROM_INSIDE)
    for piece in cut.values():
        assert clean(f"INFO CUDA {piece}out of memory.{piece}") == "INFO CUDA out of memory."
