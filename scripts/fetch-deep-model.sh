#!/usr/bin/env bash
# Builds the deep tier's default model into
# <repo>/models/all-MiniLM-L6-v2-int8/:
#
# - model.onnx: all-MiniLM-L6-v2 written as an ONNX graph with 8-bit weights
#   by scripts/minilm_onnx.py, from the safetensors scripts/fetch-model.sh
#   fetches (run first, here);
# - tokenizer.json: the model's own, copied;
# - libonnxruntime.so: ONNX Runtime 1.32.0 (MIT), the C++ library Mneme
#   loads at run time to run the graph, taken from the PyPI `onnxruntime`
#   wheel (no other registry serves it to these machines).
#
# The Python packages that write and quantise the graph (onnx, onnxruntime,
# numpy; scripts/requirements-deep-model.txt, pinned by version and sha256)
# go into a throwaway venv. The build is deterministic: every file is
# checked against its pinned sha256 before it is moved into place, so a
# different result fails here instead of changing the vectors Mneme records.
# Safe to run again: when the three files are present and verified, nothing
# is downloaded or built.
#
# Prints the model directory on stdout (for scripts); progress goes to stderr.
set -euo pipefail

readonly MODEL_FILES=(model.onnx tokenizer.json libonnxruntime.so)
declare -A FILE_SHA256=(
    [model.onnx]="bbc29756693277eae8378598634b76bbd14f1f6fbc6d10eb96984d37ea9a4b6f"
    [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    [libonnxruntime.so]="6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f"
)
readonly RUNTIME_IN_WHEEL="onnxruntime/capi/libonnxruntime.so.1.32.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model_dir="${repo_root}/models/all-MiniLM-L6-v2-int8"

# shellcheck source=lib/pinned-files.sh
source "${repo_root}/scripts/lib/pinned-files.sh"

if all_verified "${model_dir}"; then
    echo "all-MiniLM-L6-v2 (8-bit ONNX) already present and verified" >&2
    echo "${model_dir}"
    exit 0
fi

source_dir="$("${repo_root}/scripts/fetch-model.sh")"

work_dir="$(mktemp -d)"
trap 'rm -rf "${work_dir}"' EXIT
echo "installing onnx, onnxruntime and numpy (pinned) into a throwaway venv" >&2
python3 -m venv "${work_dir}/venv"
"${work_dir}/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --requirement "${repo_root}/scripts/requirements-deep-model.txt" >&2

mkdir -p "${model_dir}"
staging="$(mktemp -d "${model_dir}/.staging.XXXXXX")"
trap 'rm -rf "${work_dir}" "${staging}"' EXIT
echo "writing all-MiniLM-L6-v2 as an 8-bit ONNX graph" >&2
"${work_dir}/venv/bin/python" "${repo_root}/scripts/minilm_onnx.py" "${source_dir}" "${staging}/model.onnx" \
    2> >(grep -v "consider to run pre-processing" >&2)
cp "${source_dir}/tokenizer.json" "${staging}/tokenizer.json"
site_packages="$("${work_dir}/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "${site_packages}/${RUNTIME_IN_WHEEL}" "${staging}/libonnxruntime.so"

move_verified "${staging}" "${model_dir}" "the built files do not have the pinned sha256"

echo "all-MiniLM-L6-v2 (8-bit ONNX) built and verified" >&2
echo "${model_dir}"
