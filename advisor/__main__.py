"""`python -m advisor`: the same as the `vllm-advisor` console script."""
from .cli import run

run()
