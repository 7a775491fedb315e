# Shared by the scripts in this folder (sourced, not run).

quietly() {  # run a setup step; show its output only when it fails
    local log
    log="$(mktemp)"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        echo "setup step failed: $*" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

install_venv() {  # create .venv (once) and install the project into it, with extras "$1"
    [ -x .venv/bin/python ] || python3 -m venv .venv
    quietly .venv/bin/python -m pip install --upgrade pip
    quietly .venv/bin/python -m pip install -e ".$1"
}
