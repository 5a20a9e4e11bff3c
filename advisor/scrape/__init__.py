"""vLLM's Prometheus /metrics: fetched or read, parsed, named per release, judged, and joined with the log's report."""
