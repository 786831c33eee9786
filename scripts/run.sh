#!/usr/bin/env bash
# Builds Mneme and runs the memory service on the embedded log.
#
#   scripts/run.sh                      # ./swarm.toml, data in ./.data, http://127.0.0.1:7700
#   scripts/run.sh --http 127.0.0.1:8800 --data-dir /tmp/mneme
#
# Needs only what a fresh machine of this kind has: the Rust toolchain and gcc
# (for the C parts of a few dependencies). Arguments go to `mneme serve`.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

command -v cargo >/dev/null || { echo "error: cargo is not installed (https://rustup.rs)" >&2; exit 1; }
command -v cc >/dev/null || { echo "error: a C compiler is needed: apt-get install -y gcc" >&2; exit 1; }

cargo build --release --locked --bin mneme
exec "${repo_root}/target/release/mneme" serve "$@"
