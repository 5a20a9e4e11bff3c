"""verify without a server: what it would run, what it refuses, and how it says it could not run."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, analyze_fixture, fixture_path, sigint_default

from advisor import cli
from advisor.live import ladder, launch, server
from advisor.live import verify as live

sys.path.insert(0, str(ROOT / "tools"))
import verify_table


def test_the_corrected_command_becomes_api_server_arguments_on_our_own_port():
    argv = ["vllm", "serve", "/m", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "2560"]
    assert launch.server_args(argv) == (["--model", "/m", "--max-model-len", "2560"], "/m")


def test_the_served_model_name_is_what_requests_ask_for():
    _, model = launch.server_args(["vllm", "serve", "/m", "--served-model-name", "tiny"])
    assert model == "tiny"


@pytest.mark.parametrize(
    "argv",
    [
        ["bash", "-c", "vllm serve m"],
        ["python", "-m", "http.server"],
        ["vllm", "serve"],
        ["vllm", "serve", "--max-model-len", "10"],
    ],
)
def test_anything_but_vllm_serve_is_refused(argv):
    with pytest.raises(launch.CannotRun):
        launch.server_args(argv)


def test_a_log_without_the_launch_command_asks_for_cmd():
    with pytest.raises(launch.CannotRun, match="--cmd"):
        live.command_to_check(analyze_fixture("007-"), None)


def test_the_log_corrected_command_is_the_one_checked():
    argv = live.command_to_check(analyze_fixture("kv-shortfall"), None)
    assert launch.is_api_server(argv) and launch.flag_value(argv, "--max-model-len") == "2560"


def test_the_module_entry_point_is_run_with_a_local_copy_of_the_model():
    argv = [
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/models/tiny",
        "--port",
        "8000",
        "--max-model-len",
        "2560",
    ]
    assert launch.server_args(argv, "/home/me/tiny") == (
        ["--model", "/home/me/tiny", "--max-model-len", "2560"],
        "/home/me/tiny",
    )


def test_a_healthy_log_checks_its_own_command():
    argv = live.command_to_check(analyze_fixture("healthy"), None)
    assert launch.flag_value(argv, "--kv-cache-memory-bytes") == "32000000"


def test_the_ladder_stays_below_the_model_limit_and_steps_sequences_up():
    argv = ["vllm", "serve", "m", "--max-model-len", "2560"]
    assert ladder._raise(argv, "--max-model-len")[-1] == "4096"
    assert ladder._raise(["vllm", "serve", "m", "--max-model-len", "30720"], "--max-model-len", 32768)[-1] == "32768"
    limit = ["vllm", "serve", "m", "--max-model-len", "32768"]
    assert ladder._raise(limit, "--max-model-len", 32768) == limit  # nothing above the model's own limit
    assert [ladder._raise(["m", "--max-num-seqs", n], "--max-num-seqs")[-1] for n in ("1", "2", "4")] == ["2", "3", "6"]


def test_the_ladder_raises_the_knob_the_fix_changed():
    original = ["vllm", "serve", "m", "--max-num-seqs", "8"]
    assert ladder.ladder_knob(original, ["vllm", "serve", "m", "--max-num-seqs", "4"]) == "--max-num-seqs"
    assert (
        ladder.ladder_knob(original, ["vllm", "serve", "m", "--max-num-seqs", "8", "--max-model-len", "9"])
        == "--max-model-len"
    )


def test_a_batch_is_measured_as_latency_percentiles_and_total_tokens_per_second():
    result = launch.Round(command="vllm serve m", outcome="fixed")
    answers = [server.Completion(200, "", first, 64, 2.0 * (i + 1), 70) for i, first in enumerate([0.1, 0.3, 0.2, 4.0])]
    launch.measure(result, answers)
    assert (result.ttft_p50_s, result.ttft_p95_s, result.tokens_per_s) == (0.2, 4.0, 32.0)
    assert result.request_tokens == 134


def test_the_sequence_limit_comes_from_the_kv_blocks_and_the_request_length():
    # 5,760 tokens are 45 blocks of 128, one kept free; a request of 1,070 tokens takes 9 blocks.
    assert launch.sequences_that_fit(5760, 1070, 128) == 4
    assert launch.sequences_that_fit(5760, 3070, 128) == 1


def test_a_latency_price_for_removing_preemption_is_a_trade_off_with_numbers():
    before = launch.Round("c", "still failing", preemptions=21.0, ttft_p50_s=0.03, ttft_p95_s=0.05)
    after = launch.Round("c", "fixed", preemptions=0.0, ttft_p50_s=3.0, ttft_p95_s=32.5)
    [note] = live.trade_offs(before, after)
    assert "21 -> 0" in note and "0.03 s to 3 s (x100.0" in note and "32.5 s" in note
    assert live.trade_offs(before, launch.Round("c", "fixed", preemptions=0.0, ttft_p50_s=0.04, ttft_p95_s=0.06)) == []


def test_memory_that_moved_means_the_machine_changed():
    assert launch.memory_changed((9.3, 9.3), (24.7, 24.7))
    assert not launch.memory_changed((18.0, 23.5), (18.4, 23.5))
    assert not launch.memory_changed((None, None), (18.4, 23.5))  # unknown is not a change
    assert "not the flags" in live.machine_changed((9.3, 9.3), (24.7, 24.7))


def test_an_advised_port_taken_by_another_process_cannot_be_checked(capsys):
    report = analyze_fixture("port-in-use")
    advised = int(launch.flag_value(live.command_to_check(report, None), "--port"))
    with socket.socket() as other:
        other.bind(("127.0.0.1", advised))
        other.listen()
        code = cli.main(["verify", str(fixture_path("port-in-use")), "--python", sys.executable])
    out, err = capsys.readouterr()
    assert code == live.EXIT_COULD_NOT_RUN
    assert f"port {advised} is in use by another process: the port fix cannot be checked here" in err
    assert "Traceback" not in out + err


def test_without_a_vllm_environment_verify_says_it_could_not_run(tmp_path, capsys):
    code = cli.main(["verify", str(fixture_path("kv-shortfall")), "--python", str(tmp_path / "missing/python")])
    out, err = capsys.readouterr()
    assert code == live.EXIT_COULD_NOT_RUN and out == ""
    assert err.startswith("vllm-advisor verify: could not run: no vLLM environment") and err.count("\n") == 1


def test_a_model_plan_cannot_read_still_gets_the_log_s_advice_checked(tmp_path, capsys):
    # The served folder sizes the advice when plan can read it; one it cannot (here: no config.json)
    # must not stop verify, which goes on to the launch (and here says the vLLM environment is missing).
    argv = [
        "verify",
        str(fixture_path("kv-shortfall")),
        "--model",
        str(tmp_path),
        "--python",
        str(tmp_path / "no/python"),
    ]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == live.EXIT_COULD_NOT_RUN and out == ""
    assert err.startswith("vllm-advisor verify: could not run: no vLLM environment"), err


def test_the_verify_report_fits_80_columns_and_sets_before_beside_after():
    before = launch.Round(
        "python -m vllm.entrypoints.openai.api_server --model /m --max-num-seqs 8",
        "still failing",
        preemptions=14.0,
        ttft_p50_s=0.05,
    )
    after = launch.Round(
        "python -m vllm.entrypoints.openai.api_server --model /m --max-num-seqs 4 "
        "--kv-cache-memory-bytes 6000000 --max-model-len 4096",
        "fixed",
        preemptions=0.0,
        ttft_p50_s=0.06,
        log="/tmp/vllm-advisor-verify-x/vllm-1.log",
    )
    notes = live.trade_offs(before, launch.Round("c", "fixed", preemptions=0.0, ttft_p50_s=3.0, ttft_p95_s=32.5))
    text = live.render(live.Verification(after=after, before=before, notes=notes), "text")
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert any(line.split()[:3] == ["preemptions", "14", "0"] for line in text.splitlines()), text


def test_a_failed_round_says_why():
    startup = launch.Round("c", "still failing", verdict={"phase": "startup", "failure": "kv_cache_insufficient"})
    preempted = launch.Round(
        "c", "still failing", verdict={"phase": "healthy", "failure": "none"}, preemptions=12.0, completion_status=200
    )
    assert launch.reason(startup) == "startup kv_cache_insufficient"
    assert launch.reason(preempted) == "12 preemptions"
    assert launch.reason(launch.Round("c", "fixed")) == ""


def test_the_readme_table_is_what_the_live_tier_recorded():
    # Written by VLLM_ADVISOR_RECORD=1 pytest -m live tests/live/test_verify_scenarios.py; never by hand.
    rows = json.loads(verify_table.RESULTS.read_text())
    assert {r["outcome"] for r in rows} == {"fixed"}
    assert verify_table.block(rows) in (ROOT / "docs" / "verify.md").read_text()


# A stand-in for vLLM's API server: it prints the start-up lines of a real vLLM log, named as its
# model, and never answers /health, as a server still starting on a loaded machine does.
STILL_STARTING = """\
import sys, time
print(open(sys.argv[sys.argv.index("--model") + 1], encoding="utf-8").read(), flush=True)
time.sleep(600)
"""


def stand_in(tmp_path: Path) -> Path:
    """A folder whose vllm.entrypoints.openai.api_server is STILL_STARTING, to put on PYTHONPATH."""
    module = tmp_path / "stand-in" / "vllm" / "entrypoints" / "openai"
    module.mkdir(parents=True)
    (module / "api_server.py").write_text(STILL_STARTING)
    return tmp_path / "stand-in"


def test_a_server_not_ready_in_time_is_timed_out_not_still_failing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", str(stand_in(tmp_path)))
    # Corpus 044: weights loaded, then the memory profile and the KV blocks (V0 on an RTX 3090).
    argv = ["vllm", "serve", str(fixture_path("044-"))]
    result = launch.launch(argv, sys.executable, tmp_path, timeout=3)
    assert result.outcome == "timed out"
    assert result.note == "not ready after 3 s; its log had reached profiling and KV cache sizing"
    assert live.exit_code([result.outcome]) == live.EXIT_TIMED_OUT
    assert live.exit_code(["timed out", "still failing"]) == live.EXIT_TIMED_OUT
    assert live.exit_code(["still failing", "fixed"]) == live.EXIT_FIXED


def test_a_terminal_is_shown_the_wait_and_the_stage_the_new_log_reached(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(stand_in(tmp_path)))
    terminal = io.StringIO()
    argv = ["vllm", "serve", str(fixture_path("044-"))]
    result = launch.launch(argv, sys.executable, tmp_path, timeout=7, progress=terminal)
    assert result.outcome == "timed out"
    shown = terminal.getvalue()
    # Rewritten in place about every 5 s: first while nothing is logged yet, then the stage 044 reaches.
    assert re.search(r"\r  waiting for vLLM: [56] s, profiling and KV cache sizing\x1b\[K", shown), shown
    assert shown.startswith("\r  waiting for vLLM: 0 s, ") and shown.endswith("\r\x1b[K")


def stand_in_servers(marker: str) -> list[int]:
    """The pids of the stand-in servers whose command line names `marker` (their log's fixture)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            command = (Path("/proc") / entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"vllm.entrypoints.openai.api_server" in command and marker.encode() in command:
            found.append(int(entry))
    return found


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_server_outlives_the_check_however_it_ends(tmp_path, stop):
    log = tmp_path / "044.log"  # its own copy: the marker that finds this test's stand-in alone
    log.write_bytes(fixture_path("044-").read_bytes())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(stand_in(tmp_path)), str(ROOT)]),
        "VLLM_ADVISOR_LAUNCH_LOCK": str(tmp_path / "launch.lock"),
    }
    command = ["vllm-advisor", "verify", str(log), "--cmd", f"vllm serve {log}", "--python", sys.executable]
    advisor = subprocess.Popen(
        [sys.executable, "-c", "from advisor.cli import run; run()", *command[1:], "--timeout", "120"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 60
    while not stand_in_servers(str(log)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stand_in_servers(str(log)), "the stand-in server never started"
    advisor.send_signal(stop)
    advisor.wait(timeout=60)
    deadline = time.monotonic() + 30
    while stand_in_servers(str(log)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not stand_in_servers(str(log)), f"left behind after {stop.name}"
    if stop != signal.SIGKILL:
        assert advisor.returncode == 130 and advisor.stderr.read() == b"vllm-advisor: interrupted\n"
