"""follow --metrics-url: counters compared between polls, a finding when preemptions start, a recovery when
they stop, beside the log's own findings."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading

from conftest import FIXTURES, ROOT, wait_for
from helpers.metric_dumps import edited, snapshot_of

from advisor.scrape.poll import Comparison, interval_seconds

DUMP = "live/v0.29.0/preemption.metrics.txt"  # 14 preemptions, as captured


def test_interval_forms():
    assert [interval_seconds(t) for t in ("15s", "500ms", "2m", "3")] == [15, 0.5, 120, 3]


def test_preemptions_starting_and_stopping_between_polls():
    comparison = Comparison("http://host:8000/metrics")
    first = comparison.take(snapshot_of(DUMP, {"vllm:num_preemptions_total": 10}, ago=30), 0)
    assert "M101" not in {i.finding.rule for i in first}  # what the counter held before following is history
    started = [i for i in comparison.take(snapshot_of(DUMP, ago=15), 0) if i.finding.rule == "M101"]
    assert [(i.event, i.finding.evidence) for i in started] == [("finding", "metrics")]
    assert "vllm:num_preemptions_total counts 4 preemptions" in started[0].finding.message  # 14 - 10 in the interval
    stopped = [i for i in comparison.take(snapshot_of(DUMP), 0) if i.finding.rule == "M101"]
    assert [(i.event, i.finding.severity) for i in stopped] == [("recovery", "info")]
    assert "0 preemptions since the last poll" in stopped[0].finding.message
    again = comparison.take(snapshot_of(DUMP, {"vllm:num_preemptions_total": 15}), 0)
    assert [i.event for i in again if i.finding.rule == "M101"] == ["finding"]


def test_follow_polls_a_server_while_it_follows_the_log(tmp_path):
    text = (FIXTURES / DUMP).read_text()
    counts = iter([10, 10, 14, 14, 14, 14])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(edited(text, {"vllm:num_preemptions_total": next(counts, 14)}, {}).encode())

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/metrics"
    out = tmp_path / "findings.ndjson"
    with open(out, "w", encoding="utf-8") as sink:
        follow = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "advisor",
                "follow",
                "--format",
                "ndjson",
                "--metrics-url",
                url,
                "--interval",
                "0.5s",
                str(FIXTURES / "live" / "v0.29.0" / "preemption.log"),
            ],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:

            def events() -> list[tuple[str, str]]:
                return [(r["event"], r["rule"]) for r in map(json.loads, out.read_text().splitlines())]

            assert wait_for(lambda: ("recovery", "M101") in events(), 120), events()
        finally:
            follow.terminate()
            follow.wait(30)
            httpd.shutdown()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    m101 = [(r["event"], r["source"]) for r in records if r["rule"] == "M101"]
    assert m101[:2] == [("finding", url), ("recovery", url)]
    assert ("finding", "R103") in [(r["event"], r["rule"]) for r in records]  # the log's own finding
    assert follow.stderr.read() == ""
