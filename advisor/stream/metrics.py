"""Prometheus counters of a follow session, served as text format on GET /metrics from a background thread."""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from advisor.report.contract import StreamFinding, Verdict

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class FollowCounters:
    """What a follow session has seen; updated by the reading thread, read by the HTTP thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lines_read = 0
        self.findings: Counter[tuple[str, str]] = Counter()
        self.retractions: Counter[tuple[str, str]] = Counter()
        self.recoveries: Counter[str] = Counter()
        self.verdicts: dict[int, Verdict] = {}

    def record(self, lines_read: int, reported: list[StreamFinding], verdicts: dict[int, Verdict]) -> None:
        with self._lock:
            self.lines_read = lines_read
            for item in reported:
                if item.event == "recovery":
                    self.recoveries[item.finding.rule] += 1
                    continue
                key = (item.finding.rule, item.finding.severity)
                (self.retractions if item.retracted else self.findings)[key] += 1
            self.verdicts = dict(verdicts)

    def exposition(self) -> str:
        with self._lock:
            out = [
                "# HELP vllm_advisor_lines_read_total Log lines read.",
                "# TYPE vllm_advisor_lines_read_total counter",
                f"vllm_advisor_lines_read_total {self.lines_read}",
                "# HELP vllm_advisor_findings_total Findings reported, by rule and severity.",
                "# TYPE vllm_advisor_findings_total counter",
            ]
            out += [
                f"vllm_advisor_findings_total{_labels(rule=r, severity=s)} {n}"
                for (r, s), n in sorted(self.findings.items())
            ]
            out += [
                "# HELP vllm_advisor_findings_retracted_total Findings withdrawn because a later one superseded them.",
                "# TYPE vllm_advisor_findings_retracted_total counter",
            ]
            out += [
                f"vllm_advisor_findings_retracted_total{_labels(rule=r, severity=s)} {n}"
                for (r, s), n in sorted(self.retractions.items())
            ]
            out += [
                "# HELP vllm_advisor_recoveries_total Reported degradations that cleared, by rule.",
                "# TYPE vllm_advisor_recoveries_total counter",
            ]
            out += [f"vllm_advisor_recoveries_total{_labels(rule=r)} {n}" for r, n in sorted(self.recoveries.items())]
            out += [
                "# HELP vllm_advisor_last_verdict The current verdict of each run (always 1).",
                "# TYPE vllm_advisor_last_verdict gauge",
            ]
            out += [
                f"vllm_advisor_last_verdict{_labels(run=str(run), phase=v.phase, failure=v.failure)} 1"
                for run, v in sorted(self.verdicts.items())
            ]
        return "\n".join(out) + "\n"


def _labels(**labels: str) -> str:
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in labels.items()
    )
    return "{" + ",".join(escaped) + "}"


def serve(counters: FollowCounters, host: str, port: int) -> ThreadingHTTPServer:
    """Start serving in a daemon thread; port 0 picks a free one (see `server.server_address`)."""

    class MetricsHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = counters.exposition().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # stdout carries findings; scrapes are not news
            pass

    server = ThreadingHTTPServer((host, port), MetricsHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
