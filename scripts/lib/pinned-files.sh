# Helpers for scripts that put hash-pinned files into a directory
# (scripts/fetch-model.sh, scripts/fetch-deep-model.sh). Sourced, not run.
# The caller defines MODEL_FILES (the file names) and FILE_SHA256 (an
# associative array: name -> pinned sha256).

sha256_of() {
    python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

# True when every file is in `$1` with its pinned hash.
all_verified() {
    local directory="$1" name
    for name in "${MODEL_FILES[@]}"; do
        [[ -f "${directory}/${name}" ]] || return 1
        [[ "$(sha256_of "${directory}/${name}")" == "${FILE_SHA256[${name}]}" ]] || return 1
    done
}

# Checks the files staged in `$1` and moves them into `$2`; when one lacks
# its pinned hash, names each file's hash and fails with `$3`, moving none:
# a failed run never leaves a half-written model that looks complete.
move_verified() {
    local staging="$1" directory="$2" failure="$3" name
    if ! all_verified "${staging}"; then
        for name in "${MODEL_FILES[@]}"; do
            echo "  ${name}: $(sha256_of "${staging}/${name}") (expected ${FILE_SHA256[${name}]})" >&2
        done
        echo "error: ${failure}" >&2
        exit 1
    fi
    for name in "${MODEL_FILES[@]}"; do
        mv -f "${staging}/${name}" "${directory}/${name}"
    done
}
