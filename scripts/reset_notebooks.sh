#!/bin/sh
# Restore the notebooks (and their solutions) to the state committed in git.
#
#   scripts/reset_notebooks.sh            every notebook under notebooks/
#   scripts/reset_notebooks.sh 03         only notebooks/03_*.ipynb
#   scripts/reset_notebooks.sh --clean    also delete files you added under notebooks/
#
# Your edits to the committed notebooks are lost (copy a notebook elsewhere first to keep it).
set -eu
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "reset_notebooks: not a git checkout; download the notebooks again instead" >&2
    exit 2
fi
clean=0
paths=""
for arg in "$@"; do
    case "$arg" in
        --clean) clean=1 ;;
        [0-9][0-9]) paths="$paths $(ls notebooks/"$arg"_*.ipynb 2>/dev/null || true)" ;;
        *) echo "reset_notebooks: unknown argument '$arg' (want a notebook number like 03, or --clean)" >&2; exit 2 ;;
    esac
done
[ -n "$paths" ] || paths="notebooks"
# shellcheck disable=SC2086
git checkout HEAD -- $paths
if [ "$clean" = 1 ]; then
    # shellcheck disable=SC2086
    git clean -f -q -- $paths
fi
echo "restored $paths to the committed state$( [ "$clean" = 1 ] && echo ', added files removed')"
