#!/usr/bin/env bash
# The openai: backend against a real llama.cpp server (llama-cpp-python's), compared with hf:
# on the same f32 weights. See bench/_llamacpp_check.py for what is printed and why.
#
#   bash bench/llamacpp_check.sh            # first run builds llama-cpp-python (10-40 min)
#
# llama-cpp-python is built once into its own virtual environment under $CACHE (never the
# global one; it sees the global packages: torch, transformers for the converter), from its
# source distribution, whose vendor/llama.cpp/convert_hf_to_gguf.py (with its gguf-py) turns
# the tiny model into an f32 GGUF.
set -euo pipefail
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${STEADYEVAL_LLAMACPP_CACHE:-$HOME/.cache/steadyeval/llamacpp}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python}"
mkdir -p "$CACHE"
SDIST="$CACHE/sdist/llama_cpp_python-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
  "$PY" -m pip download --no-deps --no-binary llama-cpp-python -d "$CACHE/sdist" \
    "llama-cpp-python==$VERSION"
fi
VENV="$CACHE/venv"
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "building llama-cpp-python $VERSION into $VENV (once)"
  "$PY" -m venv --system-site-packages "$VENV"
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF" \
    "$VENV/bin/pip" install "$SDIST[server]"
fi
SRC="$CACHE/src/llama_cpp_python-$VERSION"
if [ ! -d "$SRC/vendor/llama.cpp/conversion" ]; then
  mkdir -p "$CACHE/src"
  tar -xzf "$SDIST" -C "$CACHE/src" "llama_cpp_python-$VERSION/vendor/llama.cpp/convert_hf_to_gguf.py" \
    "llama_cpp_python-$VERSION/vendor/llama.cpp/conversion" \
    "llama_cpp_python-$VERSION/vendor/llama.cpp/gguf-py"
fi
# The converter imports gguf from the gguf-py folder next to it (the version it was written
# for; the PyPI package is its fallback) and sentencepiece before it looks for a
# tokenizer.model (it falls back to tokenizer.json only when that file is missing).
"$VENV/bin/python" -c "import gguf" 2>/dev/null || "$VENV/bin/pip" install -q gguf
"$VENV/bin/python" -c "import sentencepiece" 2>/dev/null || "$VENV/bin/pip" install -q sentencepiece
WORK="$(mktemp -d "${TMPDIR:-/tmp}/llamacpp-check.XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT  # KEEP=1 keeps the model, GGUF and caches
"$PY" "$HERE/_llamacpp_check.py" build "$WORK/tiny-llama"
"$VENV/bin/python" "$SRC/vendor/llama.cpp/convert_hf_to_gguf.py" "$WORK/tiny-llama" \
  --outtype f32 --outfile "$WORK/tiny-llama-f32.gguf" > "$WORK/convert.log" 2>&1 \
  || { tail -20 "$WORK/convert.log"; exit 1; }
echo "converted to $(basename "$WORK")/tiny-llama-f32.gguf with $(basename "$SRC")/vendor/llama.cpp/convert_hf_to_gguf.py"
"$PY" "$HERE/_llamacpp_check.py" check "$WORK/tiny-llama" "$WORK/tiny-llama-f32.gguf" "$VENV/bin/python"
