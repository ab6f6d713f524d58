# huxleyd — every target sets itself up: a fresh machine needs only Python 3.11+ and apt.
#   make run    start the daemon (mock pins + simulator when no Pi / no API key)
#   make test   lint + the whole test suite, on Python 3.11 and 3.13
#   make config-fuzz --check-config vs the start on every generated configuration
#   make mutate mutation testing: MODULES="huxleyd/x.py …" (default: what this branch changed)
#   make ha-test  a scripted turn turns a Home Assistant light off through MCP (docs/home.md)
#   make bench  the performance table (the budgets of docs/conventions.md; real-time rows on a clocked fake card)
#   make image  a Raspberry Pi image (root, ~1 h emulated); make image-test boots it (docs/image.md)
#   make image-test-kernel  a push-to-talk turn on the image through kernel GPIO and ALSA devices
#   make image-test-nortc   the image with no RTC: pending timers and reminders across a clock step
#   make image-test-powercut  the plug pulled while a book plays; the next boot resumes it

SHELL   := /bin/bash
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
CONFIG  ?= config/dev.toml
PREFIX  ?= /opt/huxleyd
DESTDIR ?=
IMAGE_DIR ?= build/image
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE   := $(IMAGE_DIR)/huxleyd-$(VERSION)-arm64.img

.PHONY: ha-test setup run demo test lint mutate config-fuzz sanitize bench clockcard sounds install uninstall clean image image-test image-test-kernel image-test-nortc image-test-powercut image-check image-deps bundle

setup: $(VENV)/.installed $(VENV)/.extensions

# An editable install builds the C extensions in place once; a later edit of a
# source would leave pytest testing the old .so. So they are rebuilt (all, with
# --force: the tests' freshness check compares each .so with every source)
# whenever a C source, a header or setup.py is newer than this stamp.
EXT_SOURCES := $(wildcard huxleyd/audio/csrc/*.c huxleyd/audio/csrc/*.h) setup.py
$(VENV)/.extensions: $(VENV)/.installed $(EXT_SOURCES)
	@echo "setup: rebuilding the C extensions (a source changed since they were built)"
	@$(NO_C_COMPILER_CHECK)
	@HUXLEYD_WERROR=1 $(PY) setup.py build_ext --inplace --force > $(VENV)/build_ext.log 2>&1 \
	  || { tail -n 30 $(VENV)/build_ext.log >&2; echo "setup: the C build failed (whole output: $(VENV)/build_ext.log)" >&2; exit 1; }
	@touch $@

# A venv set up before can have lost our SDK since (`pip install huxley-sdk`
# by hand puts Huxley's in its place): then the stamp no longer counts, and
# setup says so and runs again (step 4 puts ours back).
SDK_BROKEN = $(shell test -f $(VENV)/.installed && ! $(PY) -m huxleyd.skillhost.sdkcheck >/dev/null 2>&1 && echo yes)

.PHONY: sdk-broken
sdk-broken:
	@$(PY) -m huxleyd.skillhost.sdkcheck || echo "setup: reinstalling, the venv's huxley_sdk is not ours"

# The speaker's mix is C (huxleyd/audio/csrc, issue 39: there is no second
# mixer), so a machine without a C compiler stops here, saying so, instead of
# failing deep in pip's output.
NO_C_COMPILER_CHECK = command -v "$${CC:-cc}" >/dev/null 2>&1 || { echo "setup: no C compiler ($${CC:-cc}): huxleyd's speaker mix is C (huxleyd/audio/csrc) and there is no other mixer; install gcc (scripts/ensure-system-deps.sh lists it) and run make setup again" >&2; exit 1; }

# Re-run when the dependency list or the C extensions (setup.py) change;
# system packages first, because
# PyAudio compiles against PortAudio and systemd-python against libsystemd.
# Each step says what it does; pip shows one line per package (its full
# output goes to $(VENV)/pip.log, shown when it fails). The SDK (sdk/, its
# own distribution) goes in first: huxleyd requires it.
$(VENV)/.installed: pyproject.toml setup.py sdk/pyproject.toml scripts/ensure-system-deps.sh $(if $(SDK_BROKEN),sdk-broken)
	@echo "setup 1/5: system packages (scripts/ensure-system-deps.sh)"
	@scripts/ensure-system-deps.sh
	@$(NO_C_COMPILER_CHECK)
	@echo "setup 2/5: virtualenv $(VENV)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup 3/5: pip itself"
	@$(PY) -m pip install --quiet --upgrade pip
	@echo "setup 4/5: pip install -e sdk (huxley_sdk)"; $(PY) -m pip install --quiet -e sdk
	@extras=dev; if pkg-config --exists libsystemd 2>/dev/null; then extras=dev,journal; fi; \
	  echo "setup 5/5: pip install -e .[$$extras] (1-3 min: PyAudio and systemd-python compile)"; \
	  set -o pipefail; \
	  if ! HUXLEYD_WERROR=1 $(PY) -m pip install --progress-bar off -e ".[$$extras]" 2>&1 | tee $(VENV)/pip.log \
	      | { grep --line-buffered -E '^(Collecting|  Building wheel for|Installing collected|Successfully)' || true; } \
	      | sed -u -e 's/^  //' -e 's/^/  /'; then \
	    tail -n 30 $(VENV)/pip.log >&2; echo "setup failed: the whole pip output is in $(VENV)/pip.log" >&2; exit 1; \
	  fi
	@touch $@ $(VENV)/.extensions
	@echo "setup done: make run (the daemon), make demo (a scripted conversation), make test"

# With ./openai.key present the daemon talks to OpenAI; without, to the simulator.
run: setup
	$(VENV)/bin/huxleyd --config $(CONFIG) $(if $(wildcard openai.key),--key-file openai.key,)

# A scripted conversation that plays by itself (chime, a tool, music ducking
# under speech), narrated here; to the sound card, else var/demo/speaker.wav.
demo: setup
	$(PY) -m huxleyd.app.demo --dir var/demo

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	@scripts/unit-security.sh

# The suite on Python 3.11 and 3.13, each in its own venv with the C
# extensions built for it (scripts/test-legs.sh: which leg runs what, and a
# leg with no interpreter here is "NOT RUN", a failure under CI=true).
# pytest exiting 5 (it collected nothing) is a broken suite, not a pass.
test: lint
	@scripts/test-legs.sh $(PY) $(PYTEST_ARGS)

# Mutation testing (mutmut) of MODULES with their mirrored tests; prints each
# survivor's diff. Without MODULES: the huxleyd/ modules changed against main;
# TESTS="…" replaces the mirrored tests (tests/a/test_b.py for huxleyd/a/b.py).
mutate: setup
	$(PY) scripts/mutate.py $(if $(TESTS),--tests "$(TESTS)",) $(MODULES)

# Every generated configuration (tests/config/fuzzcases.py) through
# --check-config and the start: a table of categories, counts and agreements.
# make test runs a sample of them.
config-fuzz: setup
	$(PY) -m tests.config.fuzzcases

# The C extensions under AddressSanitizer + UBSan, then tests/audio (scripts/sanitize.sh);
# after any change to huxleyd/audio/csrc/*.c or *.h. Rebuilds the optimised ones after.
sanitize: setup clockcard
	scripts/sanitize.sh $(PY) $(PYTEST_ARGS)

# The clocked fake sound card (hw/clockcard) the real-time rows run on.
clockcard: setup
	$(PY) -c "from tests.fakes.clockcard import build_plugin; print(build_plugin())"

bench: setup clockcard
	$(PY) -m bench

# Home Assistant core from PyPI in a scratch folder (HA_DIR, default /tmp/huxleyd-ha),
# its MCP Server integration and a demo light: a scripted turn turns the light off
# (docs/home.md). Not part of make test: the install is large.
ha-test: setup
	scripts/ha-test.sh

sounds: setup
	$(PY) scripts/make_sounds.py sounds

install: setup
	scripts/install.sh "$(DESTDIR)" "$(PREFIX)"

uninstall:
	scripts/uninstall.sh "$(DESTDIR)" "$(PREFIX)"

# The image (docs/image.md). Root only: chroot, device nodes, file owners.
# Nothing here runs in `make test`; image-check is what CI checks of it.
IMAGE_TOOLS = mmdebstrap qemu-user-static qemu-system-arm binfmt-support arch-test \
	dosfstools mtools fdisk e2fsprogs xz-utils device-tree-compiler
# image-test-kernel also builds a kernel module (gpio-sim) for the image's kernel.
KERNEL_TEST_TOOLS = gcc-aarch64-linux-gnu make flex bison bc dwarves libelf-dev libssl-dev espeak-ng

# Installs the Debian packages named that are missing (one recipe for both lists).
define apt_ensure
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null \
	  | grep -q "ok installed" || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then echo "installing:$$missing"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi
endef

image-deps:
	$(call apt_ensure,$(IMAGE_TOOLS))

image: image-deps
	image/build.sh $(IMAGE_DIR)

# The file `huxleyctl update` installs on a device (after make image).
bundle:
	image/bundle.sh $(IMAGE_DIR)/huxleyd-$(VERSION)-update.tar $(BUNDLE_VERSION)

image-test: image-deps
	@test -f $(IMAGE) || { echo "no $(IMAGE): run make image first" >&2; exit 1; }
	image/boot-test.sh $(IMAGE)

# The image's kernel drives the button and the sound: gpio-sim and snd-aloop
# (docs/image.md, "The kernel test"). About 15 min emulated; separate from
# image-test so each boot stays one story.
image-test-kernel: image-deps
	$(call apt_ensure,$(KERNEL_TEST_TOOLS))
	@test -f $(IMAGE) || { echo "no $(IMAGE): run make image first" >&2; exit 1; }
	image/kernel-test.sh $(IMAGE)

# No RTC, as on a Pi: a timer and reminders from before the boot, the clock
# stepped forward as timesyncd does (docs/image.md, "The no-RTC test").
image-test-nortc: image-deps
	@test -f $(IMAGE) || { echo "no $(IMAGE): run make image first" >&2; exit 1; }
	image/nortc-test.sh $(IMAGE)

# The power cut: QEMU killed while a book plays, then booted again: a clean
# boot, and the book resumes within a second of where it was heard
# (docs/image.md, "The power-cut test"). About 15 min emulated.
image-test-powercut: image-deps
	@command -v ffmpeg >/dev/null || { echo "image-test-powercut: ffmpeg missing (apt-get install ffmpeg)" >&2; exit 1; }
	@test -f $(IMAGE) || { echo "no $(IMAGE): run make image first" >&2; exit 1; }
	image/powercut-test.sh $(IMAGE)

image-check: setup
	$(PY) -m pytest -q tests/image tests/firstboot

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build *.egg-info sdk/build sdk/src/*.egg-info
