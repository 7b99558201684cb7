# Sourced by the scripts after scripts/install-deps.sh: the project's virtual environment
# (.venv/, or $AFS_VENV) first on PATH, so `python3`, `pip`, `pytest` and `cmake` are the
# ones installed there, whatever python3 the machine has.
# shellcheck shell=bash
AFS_VENV=${AFS_VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv}
export VIRTUAL_ENV=$AFS_VENV
case ":$PATH:" in
    *":$AFS_VENV/bin:"*) ;;
    *) export PATH="$AFS_VENV/bin:$PATH" ;;
esac
hash -r
