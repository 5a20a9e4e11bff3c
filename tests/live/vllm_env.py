"""Where the live tier finds vLLM: the Python of its own environment (live/setup_env.sh builds it)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = Path(os.environ.get(
    "VLLM_ADVISOR_VLLM_PYTHON",
    Path.home() / ".cache/vllm-advisor/vllm-venv/bin/python"))
