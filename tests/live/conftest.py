"""The live tier's tiny model, built once per session with the vLLM environment's own Python."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vllm_env import REPO, VLLM_PYTHON


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    if not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv python at {VLLM_PYTHON}: run live/setup_env.sh first")
    out = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run([str(VLLM_PYTHON), str(REPO / "live/build_tiny_model.py"), "--out", str(out)],
                   check=True, timeout=300)
    return out
