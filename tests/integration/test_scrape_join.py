"""The log's preemption inferences settled by /metrics, and `--metrics` on the command line: sources,
bad input, safety."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time

import pytest
from conftest import FIXTURES, ROOT

from advisor import pipeline
from advisor.scrape.fetch import MAX_BYTES, MetricsError, read
from advisor.scrape.join import join
from advisor.scrape.snapshot import parse

LIVE = FIXTURES / "live"


def joined(log, *dumps):
    analysis = pipeline.analysis(log, name=log.name)
    return join(analysis.diagnosis(), analysis.report(), [parse(read(str(d))) for d in dumps], [])


@pytest.mark.parametrize("release", ["v0.15.1", "v0.20.2", "v0.26.0", "v0.29.0"])
def test_inferred_preemption_is_confirmed_by_its_own_runs_counter(release):
    report = joined(LIVE / release / "preemption.log", LIVE / release / "preemption.metrics.txt")
    counter = json.loads((LIVE / release / "preemption.json").read_text())["preemptions"]
    assert report.verdict.failure == "preemption"
    settled = report.metrics.log_findings
    assert settled and all(s.outcome == "confirmed" and f"= {counter:g} on" in s.why for s in settled)
    confirmed = [f for f in report.findings if f.rule == settled[0].rule]
    assert confirmed[0].evidence == "confirmed" and confirmed[0].failure == "preemption"
    # The log's evidence stays the log's; the advice to read the counter is not repeated once it was read.
    assert "/metrics." not in confirmed[0].message.split(" Confirmed: ")[0]


def test_a_snapshot_of_pressure_is_withdrawn_by_a_counter_at_zero():
    # preemption-snapshot.log's one stats line of pressure (H103) beside the 0.32.0 dump of a server with the
    # same 5,760-token KV cache that preempted nothing: paired here for the mechanism, not one run.
    report = joined(LIVE / "preemption-snapshot.log", LIVE / "healthy-cache-full.metrics.txt")
    assert [(s.rule, s.outcome) for s in report.metrics.log_findings] == [("H103", "withdrawn")]
    assert "is 0 on" in report.metrics.log_findings[0].why
    assert "H103" not in [f.rule for f in report.findings]
    assert (report.verdict.phase, report.verdict.failure) == ("healthy", "none")


def test_metrics_of_another_server_settle_nothing():
    # healthy.metrics.txt is of a 31,232-token cache; the log's server had 5,760 tokens.
    report = joined(LIVE / "v0.29.0" / "preemption.log", LIVE / "v0.29.0" / "healthy.metrics.txt")
    assert [s.outcome for s in report.metrics.log_findings] == ["unsettled"]
    assert "another server" in report.metrics.log_findings[0].why
    assert report.findings[0].evidence == "inferred"


def test_log_only_report_has_no_metrics_section():
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "--format", "json", str(LIVE / "healthy.log")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "metrics" not in json.loads(out.stdout)


class Server:
    """A loopback HTTP server answering one route table: (status, headers, body) per path."""

    def __init__(self, routes: dict):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, headers, body = routes[self.path.split("?")[0]]
                if callable(body):
                    body = body()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def server():
    dump = (LIVE / "v0.29.0" / "preemption.metrics.txt").read_bytes()

    def slow():
        time.sleep(3)
        return dump

    made = Server(
        {
            "/metrics": (200, {}, dump),
            "/html": (200, {}, b"<html><body>login</body></html>"),
            "/broken": (500, {}, b"oops"),
            "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
            "/moved": (301, {"Location": "/metrics"}, b""),
            "/slow": (200, {}, slow),
            "/huge": (200, {}, b"# " + b"x" * (MAX_BYTES + 10)),
        }
    )
    yield made
    made.close()


def advisor(*args, timeout=300):  # the shared machine can be slow to start Python
    return subprocess.run(
        [sys.executable, "-m", "advisor", "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def test_url_source_is_fetched_and_credentials_never_shown(server):
    url = server.url.replace("http://", "http://ops:s3cret@") + "/metrics?token=abc"
    done = advisor("--metrics", url, str(LIVE / "v0.29.0" / "preemption.log"))
    assert done.returncode == 1 and done.stderr == ""
    assert "s3cret" not in done.stdout and "token=abc" not in done.stdout and "ops" not in done.stdout
    read_ = json.loads(done.stdout)["metrics"]["read"][0]
    assert read_["source"] == server.url + "/metrics" and read_["fetched"] and read_["values"]["preemptions"] == 14


def test_redirect_within_http_is_followed(server):
    assert parse(read(server.url + "/moved")).total(("vllm:num_preemptions",)) == 14


@pytest.mark.parametrize(
    "path, says",
    [
        ("/html", "not Prometheus text: line 1: '<html><body>login</body></html>'"),
        ("/broken", "HTTP 500 Internal Server Error"),
        ("/to-file", "redirected to another scheme; not followed"),
        ("/huge", "larger than the 64 MiB cap for a metrics dump; not read"),
    ],
)
def test_bad_source_is_one_line_and_the_log_analysis_goes_on(server, path, says):
    log = LIVE / "v0.29.0" / "preemption.log"
    done = advisor("--metrics", server.url + path, str(log))
    assert done.stderr == f"vllm-advisor: {server.url}{path}: {says}\n"
    report = json.loads(done.stdout)
    assert report["verdict"]["rule"] == "R103" and done.returncode == 1
    assert report["metrics"]["missing"] == [{"source": server.url + path, "error": says}]
    alone = advisor("--metrics", server.url + path)
    assert (alone.returncode, alone.stdout, alone.stderr) == (2, "", done.stderr)


def test_timeout_and_unreachable(server):
    with pytest.raises(MetricsError, match="no answer within 1 s"):
        read(server.url + "/slow", timeout=1)
    done = advisor("--metrics", "http://127.0.0.1:9/metrics")
    assert done.returncode == 2 and done.stderr.startswith("vllm-advisor: http://127.0.0.1:9/metrics: unreachable")


@pytest.mark.parametrize(
    "source, says",
    [
        ("/nonexistent.txt", "no such file"),
        ("/tmp", "is a directory"),
        ("file:///etc/passwd", "only http and https URLs are fetched"),
    ],
)
def test_bad_file_or_scheme(source, says):
    done = advisor("--metrics", source)
    assert done.returncode == 2 and says in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "metrics.fifo"
    os.mkfifo(fifo)
    with pytest.raises(MetricsError, match="not a regular file"):
        read(str(fifo))


def test_not_a_vllm_metrics_dump(tmp_path):
    other = tmp_path / "node.txt"
    other.write_text("# TYPE node_load1 gauge\nnode_load1 0.5\n")
    done = advisor("--metrics", str(other))
    assert done.returncode == 2 and "no vllm: metric in it" in done.stderr


def test_replicas_repeat_the_option_and_text_shows_the_bottleneck():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "--format",
            "text",
            "--metrics",
            str(LIVE / "v0.26.0" / "healthy-cache-full.metrics.txt"),
            "--metrics",
            str(LIVE / "v0.26.0" / "healthy.metrics.txt"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "Likely bottleneck (from /metrics): load spread unevenly over the replicas (M110" in done.stdout
    assert done.stdout.count("Metrics read:") == 2


def test_every_format_writes_a_joined_report():
    import jsonschema

    from advisor.report.formats import FORMATS, render

    SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())

    report = joined(LIVE / "v0.29.0" / "preemption.log", LIVE / "v0.29.0" / "preemption.metrics.txt")
    texts = {name: render(name, [report]) for name in FORMATS}
    sarif = json.loads(texts["sarif"])
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    m101 = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "M101")
    assert m101["properties"]["evidence"] == "metrics" and "region" not in m101["locations"][0]["physicalLocation"]
    assert "(from /metrics)" in texts["text"] and "Likely bottleneck (from /metrics)" in texts["markdown"]
    assert json.loads(texts["json"])["metrics"]["log_findings"][0]["outcome"] == "confirmed"
    assert any(json.loads(line).get("evidence") == "metrics" for line in texts["ndjson"].splitlines())


def test_joined_report_keeps_the_shipped_report_schema():
    import jsonschema

    schema = json.loads((ROOT / "advisor" / "report" / "schemas" / "report.json").read_text())
    for log, dump in (
        (LIVE / "v0.29.0" / "preemption.log", LIVE / "v0.29.0" / "preemption.metrics.txt"),
        (LIVE / "preemption-snapshot.log", LIVE / "healthy-cache-full.metrics.txt"),
    ):
        jsonschema.Draft202012Validator(schema).validate(json.loads(joined(log, dump).to_json()))
    alone = join(None, None, [parse(read(str(LIVE / "v0.26.0" / "preemption.metrics.txt")))], [])
    jsonschema.Draft202012Validator(schema).validate(json.loads(alone.to_json()))


def test_one_scrape_of_a_url_gives_counts_never_a_rate_over_the_server_s_lifetime(server):
    # The real dump of a preempting 0.29.0 run, fetched long after it was captured: its counters' _created
    # times make a lifetime of hours, whose tokens per second would be near 0 and fire M107.
    log, dump = LIVE / "v0.29.0" / "preemption.log", LIVE / "v0.29.0" / "preemption.metrics.txt"
    analysis = pipeline.analysis(log, name=log.name)
    report = join(analysis.diagnosis(), analysis.report(), [parse(read(server.url + "/metrics"))], [])
    fetched = report.metrics.read[0]
    assert fetched.fetched and fetched.values["preemptions"] == 14
    assert "M107" not in [f.rule for f in report.findings]
    # The rate the rules read is the log's own, over its stats lines while requests ran, as for the file.
    saved = joined(log, dump).metrics.read[0].values
    assert (fetched.values["generation_tok_s"], fetched.values["rate_window_s"]) == (
        saved["generation_tok_s"],
        saved["rate_window_s"],
    )
