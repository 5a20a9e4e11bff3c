"""verify without a server: what it would run, what it refuses, and how it says it could not run."""
from __future__ import annotations

import pytest
from conftest import analyze_fixture, fixture_path

from advisor import cli
from advisor.live import verify as live


def test_the_corrected_command_becomes_api_server_arguments_on_our_own_port():
    argv = ["vllm", "serve", "/m", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "2560"]
    assert live.server_args(argv) == (["--model", "/m", "--max-model-len", "2560"], "/m")


def test_the_served_model_name_is_what_requests_ask_for():
    _, model = live.server_args(["vllm", "serve", "/m", "--served-model-name", "tiny"])
    assert model == "tiny"


@pytest.mark.parametrize("argv", [
    ["bash", "-c", "vllm serve m"],
    ["python", "-m", "http.server"],
    ["vllm", "serve"],
    ["vllm", "serve", "--max-model-len", "10"],
])
def test_anything_but_vllm_serve_is_refused(argv):
    with pytest.raises(live.CannotRun):
        live.server_args(argv)


def test_a_log_without_the_launch_command_asks_for_cmd():
    with pytest.raises(live.CannotRun, match="--cmd"):
        live.command_to_check(analyze_fixture("007-"), None)


def test_the_log_corrected_command_is_the_one_checked():
    argv = live.command_to_check(analyze_fixture("kv-shortfall"), None)
    assert argv[:2] == ["vllm", "serve"] and argv[argv.index("--max-model-len") + 1] == "2560"


def test_ladder_steps_raise_the_length_then_the_sequences():
    argv = ["vllm", "serve", "m", "--max-model-len", "2560"]
    assert live._raise(argv, "--max-model-len")[-1] == "4096"
    assert live._raise(argv, "--max-num-seqs")[-2:] == ["--max-num-seqs", "8"]
    assert live._raise(argv + ["--max-num-seqs", "8"], "--max-num-seqs")[-1] == "16"


def test_a_batch_is_measured_as_mean_first_token_and_total_tokens_per_second():
    result = live.Round(command="vllm serve m", outcome="fixed")
    answers = [live.live_server.Completion(200, "", 0.1, 64, 2.0), live.live_server.Completion(200, "", 0.3, 64, 4.0)]
    live.measure(result, answers)
    assert (result.first_token_s, result.tokens_per_s) == (0.2, 32.0)


def test_without_a_vllm_environment_verify_says_it_could_not_run(tmp_path, capsys):
    code = cli.main(["verify", str(fixture_path("kv-shortfall")), "--python", str(tmp_path / "missing/python")])
    assert code == live.EXIT_COULD_NOT_RUN
    assert "could not run: no vLLM environment" in capsys.readouterr().out


def test_a_failed_round_says_why():
    startup = live.Round("c", "still failing", verdict={"phase": "startup", "failure": "kv_cache_insufficient"})
    preempted = live.Round("c", "still failing", verdict={"phase": "healthy", "failure": "none"}, preemptions=12.0,
                           completion_status=200)
    assert live.reason(startup) == "startup kv_cache_insufficient"
    assert live.reason(preempted) == "12 preemptions"
    assert live.reason(live.Round("c", "fixed")) == ""
