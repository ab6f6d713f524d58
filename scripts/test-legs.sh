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
# The leg of `make setup`'s venv runs the whole suite. The other leg runs
# everything that depends on the interpreter (the C extensions, asyncio, the
# parsers, the daemon end to end) but not the real-time tests on the clocked
# fake card (-m clockcard): those judge the machine's scheduling, which the
# interpreter version does not change. LEGS_FULL=1 runs them on both.
set -u
cd "$(dirname "$0")/.."
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
default_version=$(version_of "$default_py")
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
    marks="not soak"
    if [ "$py" != "$default_py" ] && [ "${LEGS_FULL:-0}" != 1 ]; then
        marks="not soak and not clockcard"
    fi
    # The extensions are optional at install (a device without a compiler still
    # runs): here they must be there, or their tests would skip and pass.
    if ! err=$("$py" -c 'import huxleyd.audio._dsp, huxleyd.audio._rtout' 2>&1); then
        note "Python $v leg FAILED: the C extensions are not built for it: $(echo "$err" | tail -1)"
        failed=1; continue
    fi
    label="Python $("$py" -c 'import platform; print(platform.python_version())')"
    echo "== $label: pytest -m '$marks' ($py)"
    log=$(mktemp)
    start=$(date +%s)
    { "$py" -m pytest -q -m "$marks" "$@"; echo "$?" > "$log.rc"; } 2>&1 | tee "$log"
    rc=$(cat "$log.rc")
    result=$(grep -E '^[0-9]+ (passed|failed|errors?|skipped|deselected)' "$log" | tail -1)
    took=$(( $(date +%s) - start ))
    rm -f "$log" "$log.rc"
    if [ "$rc" -eq 5 ]; then
        failed=1; note "$label leg FAILED: pytest collected no tests: the suite is missing"
    elif [ "$rc" -ne 0 ]; then
        failed=1; note "$label leg FAILED (pytest exit $rc): ${result:-no result line} (${took} s)"
    else
        note "$label: ${result%% in *} in ${took} s (-m '$marks')"
    fi
done
echo
echo "== make test, per Python"
printf '%s' "$summary"
exit "$failed"
