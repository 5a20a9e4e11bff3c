"""syslog-ng Python destination: each message of a vLLM log goes through the streaming engine.

Findings are appended to a file as JSON lines.
"""

from __future__ import annotations

from typing import Any

from advisor import StreamEngine, StreamFinding


class VllmAdvisorDestination:
    """Loaded by syslog-ng as `python(class("advisor.syslog_ng.VllmAdvisorDestination") options("out" PATH))`.

    Options: "out", the file findings are appended to (one JSON object per line, the `follow --format ndjson`
    records); "source", the name findings carry (default "syslog-ng").
    """

    def init(self, options: dict[str, Any]) -> bool:
        self.engine = StreamEngine(str(options.get("source", "syslog-ng")))
        self.out = open(options["out"], "a", encoding="utf-8")  # noqa: SIM115  (open until deinit)
        return True

    def deinit(self) -> None:
        # syslog-ng is stopping: the last run is judged whole, as batch mode would judge the log so far.
        self._write(self.engine.finish())
        self.out.close()

    def send(self, msg: Any) -> bool:  # a syslog.LogMessage, importable only inside syslog-ng
        message = msg["MESSAGE"]  # bytes in syslog-ng 3.38; a str in some other versions
        self._write(self.engine.feed_raw(message))
        return True

    def _write(self, reported: list[StreamFinding]) -> None:
        for item in reported:
            self.out.write(item.to_json() + "\n")
        if reported:
            self.out.flush()  # whoever tails the findings file sees each one at once
