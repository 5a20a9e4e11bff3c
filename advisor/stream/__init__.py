"""Streaming: the incremental engine, `follow`, and the follow session's own /metrics."""
