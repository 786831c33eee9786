#!/usr/bin/env bash
# Sets Mneme's version everywhere it is written: the workspace's crates
# (Cargo.toml, Cargo.lock), hence the API's (the OpenAPI document's
# info.version), and the two SDKs', which follow the API's: the Python
# package's (clients/python/src/mneme_client/__init__.py's __version__,
# which pyproject.toml reads) and the npm package's (clients/typescript's
# package.json and package-lock.json). Then regenerates schemas/ and the
# SDKs' types (scripts/schemas.sh). tests/schemas.rs fails while any of
# them differ.
#
#     scripts/set-version.sh 0.2.0
set -euo pipefail

if [[ $# -ne 1 || ! "$1" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
    echo "usage: $0 <major.minor.patch[-pre]>, e.g. $0 0.2.0" >&2
    exit 2
fi
version="$1"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

# The one `version = …` line of [workspace.package].
sed -i "/^\[workspace\.package\]/,/^\[/ s/^version = \".*\"/version = \"${version}\"/" Cargo.toml
cargo update --workspace --offline --quiet
sed -i "s/^__version__ = \".*\"/__version__ = \"${version}\"/" clients/python/src/mneme_client/__init__.py
"${repo_root}/scripts/install-typescript-sdk.sh" >/dev/null 2>&1
node_bin="${repo_root}/.venv/node/bin"
(cd clients/typescript && "${node_bin}/node" "${node_bin}/npm-cli.js" version "${version}" \
    --no-git-tag-version --allow-same-version >/dev/null)
"${repo_root}/scripts/schemas.sh"
echo "version ${version}: Cargo.toml, Cargo.lock, schemas/, both SDKs" >&2
