#!/bin/sh
# make test's suite, once per Python that huxleyd supports: 3.11 (Raspberry Pi
# OS bookworm, `make install`) and 3.13 (the image: Debian trixie). Each leg has
# its own venv with the C extensions built by that interpreter:
#   the venv of `make setup` (.venv) for the version it was made with,
#   .venv-3.X (made here by `make setup VENV=.venv-3.X PYTHON=...`) for the other.
# Then one summary: each leg's result and time, or "Python 3.X leg NOT RUN: why".
#
#   scripts/test-legs.sh PY [PYTEST ARGS...]     PY: the default venv's python
#
# A leg without an interpreter here is NOT RUN, said loudly; under CI=true that
# fails the run: CI's machines have both interpreters, so a missing one means a
# leg silently vanished, and a green run would claim a version it never tested.
# HUXLEYD_PYTHON_3_11 / HUXLEYD_PYTHON_3_13 name an interpreter explicitly;
# HUXLEYD_TEST_PYTHONS="3.11 3.13" is the list of versions.
#
# Two phases, so that both legs fit the suite's ten minutes on two cores:
#   1. every leg at once, everything but the real-time tests on the clocked fake
#      card (-m clockcard): each leg is one process at a time, and the rest of
#      the suite is built to be load-proof (lockstep clocks, events, not time);
#   2. the real-time tests alone, on the default leg only: they judge the
#      machine's scheduling, which the interpreter version does not change, and
#      a second leg beside them would only make them retry. LEGS_FULL=1 runs
#      them on every leg (one after the other).
# Each leg's output is kept in its own log and printed whole when it ends.
set -u
cd "$(dirname "$0")/.."
# make test claims to have tested the C: every extension must be built, and
# built from these sources (tests/fakes/extensions.py checks, at session start)
export HUXLEYD_REQUIRE_EXTENSIONS=1
default_py=$1; shift
VERSIONS=${HUXLEYD_TEST_PYTHONS:-3.11 3.13}

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# An interpreter of version $1, or nothing. Tried: the override, pythonX.Y on
# PATH (a pyenv shim that has no such version fails the version check), then
# pyenv's and the system's usual places.
find_python() {
    want=$1
    var="HUXLEYD_PYTHON_$(echo "$want" | tr . _)"
    eval "override=\${$var:-}"
    pyenv_root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    for cand in $override "$(command -v "python$want" 2>/dev/null)" \
        "$pyenv_root"/versions/"$want"*/bin/python"$want" \
        /usr/bin/python"$want" /usr/local/bin/python"$want"; do
        [ -n "$cand" ] && [ -x "$cand" ] || continue
        if [ "$(version_of "$cand")" = "$want" ]; then echo "$cand"; return 0; fi
    done
    return 1
}

summary=""
failed=0
note() { summary="$summary$1
"; }
# PYTEST ARGS that name tests may leave a phase with none: only the whole suite
# must have tests in both phases.
narrowed=0
[ "$#" -gt 0 ] && narrowed=1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One pytest run of leg $1 (label) with python $2 and marks $3, into $logs/$4.
run_leg() {
    label=$1 py=$2 marks=$3 name=$4; shift 4
    start=$(date +%s)
    "$py" -m pytest -q -m "$marks" "$@" > "$logs/$name.log" 2>&1
    echo "$? $(( $(date +%s) - start ))" > "$logs/$name.rc"
}

# Report the run $1 of leg $2 with marks $3: its log whole, then its summary line.
report() {
    name=$1 label=$2 marks=$3
    echo "== $label: pytest -m '$marks'"
    cat "$logs/$name.log"
    read -r rc took < "$logs/$name.rc"
    result=$(grep -E '^[0-9]+ (passed|failed|errors?|skipped|deselected)' "$logs/$name.log" | tail -1)
    if [ "$rc" -eq 5 ] && [ "$narrowed" = 1 ]; then
        note "$label: no test of -m '$marks' among the tests asked for"
    elif [ "$rc" -eq 5 ]; then
        failed=1; note "$label leg FAILED: pytest collected no tests (-m '$marks'): the suite is missing"
    elif [ "$rc" -ne 0 ]; then
        failed=1; note "$label leg FAILED (pytest exit $rc): ${result:-no result line} (${took} s, -m '$marks')"
    else
        note "$label: ${result%% in *} in ${took} s (-m '$marks')"
    fi
}

default_version=$(version_of "$default_py")
legs=""
for v in $VERSIONS; do
    if [ "$v" = "$default_version" ]; then
        py=$default_py
    elif interp=$(find_python "$v"); then
        venv=".venv-$v"
        echo "== Python $v: $venv from $interp (make setup)"
        set_up=$(date +%s)
        if ! make --no-print-directory setup VENV="$venv" PYTHON="$interp"; then
            note "Python $v leg FAILED: make setup VENV=$venv PYTHON=$interp failed"
            failed=1; continue
        fi
        note "Python $v: $venv set up in $(( $(date +%s) - set_up )) s (from $interp)"
        py=$venv/bin/python
    else
        note "Python $v leg NOT RUN: no python$v here (override: HUXLEYD_PYTHON_$(echo "$v" | tr . _)=PATH)"
        [ "${CI:-}" = true ] && failed=1
        continue
    fi
    # The extensions are optional at install (a device without a compiler still
    # runs): here they must be there, or their tests would skip and pass.
    if ! err=$("$py" -c 'import huxleyd.audio._dsp, huxleyd.audio._rt' 2>&1); then
        note "Python $v leg FAILED: the C extensions are not built for it: $(echo "$err" | tail -1)"
        failed=1; continue
    fi
    legs="$legs $v=$py"
done

# Phase 1: every leg at once, all but the clocked card.
echo "== phase 1: every leg at once, -m 'not soak and not clockcard'"
pids=""
for leg in $legs; do
    v=${leg%%=*} py=${leg#*=}
    run_leg "Python $v" "$py" "not soak and not clockcard" "main-$v" "$@" &
    pids="$pids $!"
done
for pid in $pids; do wait "$pid"; done
for leg in $legs; do
    v=${leg%%=*} py=${leg#*=}
    report "main-$v" "Python $("$py" -c 'import platform; print(platform.python_version())')" "not soak and not clockcard"
done

# Phase 2: the real-time tests alone.
for leg in $legs; do
    v=${leg%%=*} py=${leg#*=}
    [ "$py" = "$default_py" ] || [ "${LEGS_FULL:-0}" = 1 ] || continue
    echo "== phase 2: the real-time tests alone (Python $v)"
    run_leg "Python $v" "$py" "clockcard and not soak" "rt-$v" "$@"
    report "rt-$v" "Python $("$py" -c 'import platform; print(platform.python_version())')" "clockcard and not soak"
done
echo
echo "== make test, per Python"
printf '%s' "$summary"
exit "$failed"
