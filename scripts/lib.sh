# Shared by the scripts in this folder (sourced, not run).

step() {  # step "WHAT (and what it downloads)" CMD...: one line per step; the command's
    # output only when it fails (then all of it). On a terminal, the line below it follows
    # what pip or npm is fetching.
    local what="$1" log started status=0
    shift
    log="$(mktemp)"
    started=$SECONDS
    echo "-- $what"
    "$@" 2>&1 | tee "$log" | while IFS= read -r line; do
        if [ -t 1 ]; then
            case "$line" in
                Collecting* | Downloading* | Building* | Installing* | Successfully*)
                    printf '\r\033[K   %s' "${line:0:76}"
                    ;;
            esac
        fi
    done || status=$?
    [ -t 1 ] && printf '\r\033[K'
    if [ "$status" -ne 0 ]; then
        cat "$log" >&2
        echo "setup step failed (exit $status): $*" >&2
        rm -f "$log"
        return 1
    fi
    echo "   done in $((SECONDS - started)) s"
    rm -f "$log"
}

install_stamp() {  # the hash of pyproject.toml: an install made from it is up to date
    python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' pyproject.toml
}

venv_up_to_date() {  # venv_up_to_date "[a,b]" [DIR]: DIR (default .venv) was installed from
    # this pyproject.toml with at least these extras (the stamp: its hash, then the extras)
    local venv="${2:-.venv}"
    local stamp="$venv/.workbench-install" have_hash have_extras extra
    [ -x "$venv/bin/python" ] && [ -f "$stamp" ] || return 1
    read -r have_hash have_extras <"$stamp" || return 1
    [ "$have_hash" = "$(install_stamp)" ] || return 1
    for extra in $(echo "$1" | tr -d '[]' | tr ',' ' '); do
        case ",$(echo "$have_extras" | tr -d '[]')," in
            *",$extra,"*) ;;
            *) return 1 ;;
        esac
    done
}

install_venv() {  # install_venv "[extras]" [DIR]: create DIR (default .venv) once and
    # install the project into it, with those extras; skipped when pyproject.toml has not
    # changed since an install with those extras (the project itself is installed editable,
    # so a change to its code needs no install)
    local extras="$1" venv="${2:-.venv}"
    if venv_up_to_date "$extras" "$venv"; then
        echo "-- $venv is up to date with pyproject.toml${extras:+ and $extras}; not installing"
        return 0
    fi
    if [ ! -x "$venv/bin/python" ]; then
        step "creating $venv (python3 -m venv) and upgrading pip from PyPI" \
            sh -c "python3 -m venv '$venv' && '$venv/bin/python' -m pip install --upgrade pip"
    fi
    local what="the project and its dependencies (textual, openai, pydantic, duckdb, mcp, …)"
    case "$extras" in
        *lake*) what="$what with extras $extras (pytest, ruff, mypy; DuckDB pinned with its DuckLake, httpfs and postgres extension wheels, psycopg, moto)" ;;
        ?*) what="$what with extras $extras (pytest, ruff, mypy, pydantic-ai, the Agents SDK, langchain-openai, OpenTelemetry, …)" ;;
    esac
    step "installing $what from PyPI into $venv" "$venv/bin/python" -m pip install -e ".$extras"
    local previous=""
    [ -f "$venv/.workbench-install" ] && read -r _ previous <"$venv/.workbench-install"
    # Keep the extras installed before: the next smaller install is then up to date too.
    local merged
    merged="$(echo "$previous,$extras" | tr -d '[]' | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)"
    echo "$(install_stamp) [${merged}]" >"$venv/.workbench-install"
}
