"""`vllm-advisor compare`: real runs of one server side by side, what each changed and what that did."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, ROOT, fixture_path

from advisor import compare, pipeline

LIVE = FIXTURES / "live"


def rows_of(*logs, metrics=()):
    return compare.compare([pipeline.analysis(str(log)) for log in logs], [str(m) for m in metrics])


def advisor(*args):
    return subprocess.run(
        [sys.executable, "-m", "advisor", "compare", *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


def test_a_round_that_changed_two_knobs_is_flagged():
    # vLLM 0.26.0 refusing 32768 tokens in a 4 MB KV budget, then started with 4096 tokens in 32 MB.
    before, after = rows_of(fixture_path("099-"), fixture_path("100-"))
    assert (before.verdict, after.verdict) == ("startup/kv_cache_insufficient", "healthy/none")
    assert after.changed == {"kv_cache_memory_bytes": [4000000, 32000000], "max_model_len": [32768, 4096]}
    assert after.figures["kv_cache_tokens"] == 31232 and "kv_cache_tokens" not in before.figures
    assert "More than one knob changed (2)" in after.effect


def test_one_knob_and_its_effect_on_the_load_figures():
    # The same 0.26.0 server with --max-num-seqs 8, then 4, under the same load.
    _, after = rows_of(fixture_path("101-"), fixture_path("106-"))
    assert after.changed == {"max_num_seqs": [8, 4]}
    assert after.effect.startswith("changed --max-num-seqs 8 -> 4: verdict still healthy/none; max-num-seqs 8 -> 4")
    assert "More than one knob" not in after.effect


def test_each_run_s_metrics_give_its_counters():
    # 0.29.0: 14 preemptions counted by the preempting run's server, none by the healthy one's.
    runs = (LIVE / "v0.29.0" / "preemption.log", LIVE / "v0.29.0" / "healthy.log")
    dumps = (LIVE / "v0.29.0" / "preemption.metrics.txt", LIVE / "v0.29.0" / "healthy.metrics.txt")
    before, after = rows_of(*runs, metrics=dumps)
    assert (before.figures["preemptions"], after.figures["preemptions"]) == (14, 0)
    assert "preemptions 14 -> 0" in after.effect and "ttft_p50_s" in after.figures


def test_every_format_on_the_command_line():
    logs = (fixture_path("101-"), fixture_path("106-"))
    text = advisor(*logs)
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout.splitlines()[0].split()[:3] == ["run", "verdict", "changed"]
    markdown = advisor(*logs, "--format", "markdown").stdout
    assert markdown.startswith("| run | verdict | changed |") and "\n- " in markdown
    document = json.loads(advisor(*logs, "--format", "json").stdout)
    assert document["schema"] == "vllm-advisor.compare/1"
    assert [run["changed"] for run in document["runs"]] == [{}, {"max_num_seqs": [8, 4]}]


def test_bad_input_is_one_line():
    one = advisor(fixture_path("101-"))
    assert one.returncode == 2 and one.stderr == "vllm-advisor: compare needs two logs or more, oldest first\n"
    uneven = advisor(fixture_path("101-"), fixture_path("106-"), "--metrics", LIVE / "healthy-cache-full.metrics.txt")
    assert uneven.returncode == 2 and "give one for every log, or none" in uneven.stderr
    assert len(uneven.stderr.splitlines()) == 1
    missing = advisor(fixture_path("101-"), "no-such.log")
    assert missing.returncode == 2 and missing.stderr == "vllm-advisor: no-such.log: no such file\n"
