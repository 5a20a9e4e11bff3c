"""Judge a bucket of archived vLLM logs with Ray Data: one row of verdict per log, and its report.

    python examples/ray/verdicts.py s3://my-bucket/vllm-logs/ s3://my-bucket/vllm-verdicts/

Ray reads the files and spreads them over the cluster; each worker runs the advisor's library API
on a log's bytes. Nothing here is specific to Ray but the three calls: Spark's
`sc.binaryFiles(src).map(lambda item: verdict(item[0], item[1]))` does the same.
"""

from __future__ import annotations

import sys

import ray

from advisor import analyze


def verdict(path: str, data: bytes) -> dict:
    """One log's row: where it is, what the advisor says of it, and its whole report."""
    report = analyze(data, name=path)
    top = report.findings[0] if report.findings else None
    return {
        "path": path,
        "phase": report.verdict.phase,
        "failure": report.verdict.failure,
        "rule": report.verdict.rule,
        "change": report.command.change_args or report.command.corrected,
        "message": top.message if top else None,
        "report": report.to_json(),
    }


def verdicts(source: str) -> ray.data.Dataset:
    files = ray.data.read_binary_files(source, include_paths=True)
    return files.map(lambda row: verdict(row["path"], row["bytes"]))


if __name__ == "__main__":
    verdicts(sys.argv[1]).write_json(sys.argv[2])
