#!/usr/bin/env bash
# make sanitize: the C audio extensions built with AddressSanitizer and
# UndefinedBehaviorSanitizer, then tests/audio and tests/handsfree run against
# them (the C-vs-numpy kernel comparison, the callbacks on the clocked card, the
# safety tests, Speex's echo canceller through _aec: offline, on the clocked
# card, and in the wake word's detector).
# Every finding ends the process that made it. ASan writes it to
# build/sanitize/reports/; UBSan, loaded beside the preloaded ASan runtime,
# ignores log_path and prints to stderr, which pytest shows for the failed test
# (a child's stderr comes with its failure): the summary counts both, and any
# finding or failed test fails the run.
# The optimised extensions are rebuilt afterwards, pass or fail.
#
# Arguments after the interpreter go to pytest; those naming tests (tests/...)
# replace the default set, so a change can be checked on its own tests first:
#   scripts/sanitize.sh .venv/bin/python tests/audio/test_feeder.py
#
# Python itself is not instrumented, so the ASan runtime must be loaded first:
# LD_PRELOAD of the compiler's libasan, inherited by every child the tests start.
#
# Under ASan everything runs 2-3x slower: the clocked-card tests that judge
# timing against a bound may then fail for time, not for memory; the summary
# tells the two apart (a report is memory; a failure without one is time).
set -uo pipefail
PY=${1:-.venv/bin/python}
shift || true

restore() {
	echo "sanitize: rebuilding the optimised extensions"
	if ! "$PY" setup.py -q build_ext --inplace --force >/dev/null; then
		echo "sanitize: the optimised rebuild failed: run make setup" >&2
		return 1
	fi
}

main() {
	local py=$PY
	local tests=() args=()
	for arg in "$@"; do
		case $arg in
		tests/*) tests+=("$arg") ;;
		*) args+=("$arg") ;;
		esac
	done
	[ ${#tests[@]} -gt 0 ] || tests=(tests/audio tests/handsfree)
	local cc=${CC:-cc} asan deps reports=build/sanitize/reports
	asan=$($cc -print-file-name=libasan.so)
	if [ ! -e "$asan" ]; then
		echo "sanitize: $cc has no libasan.so (apt-get install gcc)" >&2
		return 1
	fi
	echo "sanitize: building the extensions with -fsanitize=address,undefined"
	HUXLEYD_SANITIZE=1 "$py" setup.py -q build_ext --inplace --force \
		--build-temp build/sanitize >/dev/null || return 1
	# a check that cannot see a build without the sanitizers would be a lie
	# _aec is optional (libspeexdsp-dev): checked when it was built. Only this
	# interpreter's builds: make test leaves another Python's (.venv-3.13) beside them
	local ext
	ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || return 1
	for so in huxleyd/audio/_rt"$ext" huxleyd/audio/_dsp"$ext" huxleyd/audio/_aec"$ext"; do
		[ -e "$so" ] || [ "${so#*_aec}" = "$so" ] || continue
		# read whole before grep: `ldd | grep -q` under pipefail fails when grep's
		# early exit makes ldd die of SIGPIPE (seen: an ASan build called unlinked)
		deps=$(ldd "$so") || return 1
		if ! grep -q libasan <<<"$deps"; then
			echo "sanitize: $so is not linked with ASan" >&2
			return 1
		fi
	done
	rm -rf "$reports" && mkdir -p "$reports"
	# Python leaks by design at exit: leak checks off, everything else fatal
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$PWD/$reports/asan"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$PWD/$reports/ubsan"
	export LD_PRELOAD="$asan${LD_PRELOAD:+ $LD_PRELOAD}"
	# espeak-ng hangs with the ASan runtime preloaded, and runs none of our C: left
	# out here, and the tests' own calls run it without LD_PRELOAD (wake_audio.espeak)
	"$py" -m pytest -q -p no:cacheprovider "${tests[@]}" \
		--deselect tests/audio/test_pcm.py::test_espeak_ngs_streaming_wav_parses_to_its_end \
		${args[@]+"${args[@]}"} 2>&1 | tee "$reports/pytest.out"
	local rc=${PIPESTATUS[0]} files printed
	unset LD_PRELOAD
	files=$(find "$reports" -type f -name 'asan*' | wc -l)
	printed=$(grep -cE 'runtime error:|ERROR: AddressSanitizer' "$reports/pytest.out")
	echo "sanitize: $files ASan report files, $printed findings in the test output; pytest exit $rc"
	for report in "$reports"/asan*; do
		[ -f "$report" ] && head -n 20 "$report"
	done
	[ "$files" -eq 0 ] && [ "$printed" -eq 0 ] && [ "$rc" -eq 0 ]
}
trap 'restore; exit 130' INT TERM # never leave the instrumented build behind
main "$@"
rc=$?
restore || rc=1
exit $rc
