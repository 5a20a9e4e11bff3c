"""`python -m advisor`: the same as the `vllm-advisor` console script."""
import sys

from .cli import main

sys.exit(main())
