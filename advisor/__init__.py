"""vllm-advisor: reads vLLM logs and says what to change."""
