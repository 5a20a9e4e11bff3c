"""Printed commands: built by shlex.join from an argument list, one `vllm` invocation, safe to paste into bash."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import FIXTURES
from helpers.contract import check_command
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import command
from advisor.ingest import sources
from advisor.report.build import analyze
from advisor.report.formats import command_lines, render

ADVERSARIAL = FIXTURES / "adversarial"
CASES = [json.loads(line) for line in (ADVERSARIAL / "cases.jsonl").read_text().splitlines() if line.strip()]
CRAFTED = [c for c in CASES if "model" in c]
CRAFTED_NAMES = [c["model"] for c in CRAFTED]
BASE = ADVERSARIAL / "excerpt-088-kv-too-small.log"
# The characters shlex.quote leaves unquoted (its _find_unsafe, ASCII only).
SAFE_WORD = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def pastes_as_one_command(printed: str) -> bool:
    """Scan as bash would: outside single quotes only safe words, spaces and the "'" idiom of shlex.quote.

    So no unquoted ; | & $( ` < > newline or glob can start another program or redirect output.
    """
    position = 0
    while position < len(printed):
        char = printed[position]
        if char == "'":
            end = printed.find("'", position + 1)
            if end < 0:
                return False
            position = end + 1
        elif printed.startswith('"\'"', position):
            position += 3
        elif char == " " or SAFE_WORD.match(char):
            position += 1
        else:
            return False
    return True


def analyze_file(path, user_command=None):
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name, user_command)


@pytest.mark.parametrize("case", CRAFTED, ids=[c["file"] for c in CRAFTED])
def test_crafted_model_name_stays_one_argument(case):
    report = analyze_file(ADVERSARIAL / case["file"])
    for printed in (report.command.original, report.command.corrected):
        argv = check_command(printed)
        assert argv[:3] == ["vllm", "serve", case["model"]]
        assert argv[argv.index("--served-model-name") + 1] == case["model"]
        assert pastes_as_one_command(printed)


@pytest.mark.parametrize("model", CRAFTED_NAMES)
def test_crafted_model_in_user_command_stays_one_argument(model):
    user_command = shlex.join(["vllm", "serve", model, "--max-model-len", "32768"])
    report = analyze_file(BASE, user_command)
    argv = check_command(report.command.corrected)
    assert argv == ["vllm", "serve", model, "--max-model-len", "12288"]
    assert pastes_as_one_command(report.command.corrected)


def test_shell_syntax_in_user_command_is_only_words():
    # Pasted unquoted, `;` and `$(...)` are split into plain words, then quoted on output.
    report = analyze_file(BASE, "vllm serve m; rm -rf ~ $(reboot) `id` | sh")
    argv = check_command(report.command.corrected)
    assert argv[:6] == ["vllm", "serve", "m;", "rm", "-rf", "~"]
    assert pastes_as_one_command(report.command.corrected)


def test_user_command_keeps_its_own_program():
    # The advisor changes flags, never the program: a wrapper the user runs stays the user's.
    report = analyze_file(BASE, "python -m vllm.entrypoints.openai.api_server --model m --max-model-len 32768")
    assert shlex.split(report.command.corrected)[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]


def test_unclosed_quote_in_user_command_is_refused():
    with pytest.raises(command.CommandError):
        analyze_file(BASE, "vllm serve 'unclosed")


def test_hostile_argument_keys_and_values_are_quoted():
    argv = command.from_args(
        {
            "model": "$(id)",
            "port; rm -rf ~": 1,
            "x\ny": True,
            "chat_template": "`id`",
            "override_generation_config": {"k": "'; id; '"},
            "lora_modules": ["a|b", "c&d"],
        }
    )
    printed = command.render(argv)
    assert shlex.split(printed) == argv
    assert argv[:3] == ["vllm", "serve", "$(id)"]
    assert pastes_as_one_command(printed)


def test_hostile_engine_config_model_is_one_argument():
    argv = command.from_config({"model": repr("$(reboot); `id`"), "max_seq_len": "4096"})
    assert argv == ["vllm", "serve", "$(reboot); `id`", "--max-model-len", "4096"]
    assert pastes_as_one_command(command.render(argv))


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=40),
    st.dictionaries(
        st.sampled_from(["--max-model-len", "--served-model-name", "--x"]),
        st.one_of(st.none(), st.text(max_size=20)),
        max_size=3,
    ),
)
def test_any_argument_round_trips(model, flags):
    argv = command.apply(["vllm", "serve", model], flags)
    printed = command.render(argv)
    assert shlex.split(printed) == argv
    assert pastes_as_one_command(printed)


def printed_command(text: str) -> str:
    """The corrected command as the text report prints it, its ' \\' continuation lines joined as a shell joins them."""
    lines = text.splitlines()
    block = []
    for line in lines[next(i for i, line in enumerate(lines) if line.startswith("Corrected command")) + 1 :]:
        block.append(line.strip())
        if not line.endswith(" \\"):
            break
    return " ".join(line.removesuffix(" \\") for line in block)


def test_text_report_prints_the_exact_command_or_withholds_it():
    for case in CRAFTED:
        report = analyze_file(ADVERSARIAL / case["file"])
        text = render("text", [report])
        if command_lines.shows_as_is(report.command.corrected):
            shown = printed_command(text)
            assert shlex.split(shown) == shlex.split(report.command.corrected) and pastes_as_one_command(shown)
        else:  # a newline in the name would split the command across lines on screen
            assert "not shown: it holds control or invisible characters" in text
            assert report.command.corrected not in text


def test_emoji_codes_in_a_model_name_are_printed_verbatim():
    data = BASE.read_text().replace("/models/tiny-llama", ":rocket:")
    report = analyze(sources.text_lines(data), "x")
    assert report.command.corrected.startswith("vllm serve :rocket: ")
    assert printed_command(render("text", [report])) == report.command.corrected


def test_scanner_rejects_what_bash_would_run():
    for unsafe in [
        "vllm serve m; id",
        "vllm serve $(id)",
        "vllm serve `id`",
        "vllm serve m | sh",
        "vllm serve m\nid",
        "vllm serve m & id",
        "vllm serve 'a' > f",
        "vllm serve 'open",
    ]:
        assert not pastes_as_one_command(unsafe), unsafe
