"""`python -m advisor`: the same as the `vllm-advisor` console script."""

from advisor.cli import run

run()
