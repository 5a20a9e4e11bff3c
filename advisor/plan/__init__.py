"""`vllm-advisor plan`: what fits before launch, with vLLM's own KV cache arithmetic."""
