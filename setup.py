"""The C extensions, built from source by ``pip install`` with the system compiler.

- ``huxleyd.audio._rt``: the speaker's and the mic's deadlines out of the GIL
  (``_rtout.c``, the speaker's ``Output``; ``_rtin.c``, the mic's ``Input``),
  against PortAudio (``portaudio19-dev``, which the setup already installs for
  PyAudio), and the C feeder that mixes the card's speaker. Required.
- ``huxleyd.audio._dsp``: the audio thread's per-period arithmetic (the mixer
  core for the WAV backend and a lost device, the limiter, resampling, PCM
  conversion) with the GIL held throughout. Needs only Python's headers.
  Required: the C mixer core is the only mixer (issue 39), so an install without
  a compiler fails here, saying so, rather than playing through a second mixer.
- ``huxleyd.audio._aec``: Speex's acoustic echo canceller for the mic
  (``libspeexdsp-dev``). Optional: without it the wake word does not listen
  while the speaker plays.

Both build with every warning on (-Wall -Wextra, conversions explicit), and
with every warning an error where we build them (``make setup`` sets
``HUXLEYD_WERROR=1``, so CI fails on a new warning). An install elsewhere (the
image, ``make install`` on a newer compiler) does not: there a new warning
would fail the install over a warning (the speaker's extensions are required),
which is worse than the warning. Python's own headers are included as system headers
(-isystem) so its inline functions cannot warn on our behalf.
``HUXLEYD_SANITIZE=1`` builds them with AddressSanitizer and
UndefinedBehaviorSanitizer instead of optimised (``make sanitize``).

pyproject.toml holds the metadata; this file only declares the extensions.
"""

import os
import sysconfig

from setuptools import Extension, setup

WARNINGS = ["-Wall", "-Wextra", "-Wconversion", "-Wsign-conversion"]
if os.environ.get("HUXLEYD_WERROR") == "1":
    WARNINGS.append("-Werror")
SYSTEM_HEADERS = ["-isystem", sysconfig.get_paths()["include"]]
SANITIZE = os.environ.get("HUXLEYD_SANITIZE") == "1"
# -O1 and frame pointers: readable sanitizer reports; any finding aborts the process
SANITIZERS = [
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
]


def flags(optimise: str) -> list[str]:
    return [*(SANITIZERS if SANITIZE else [optimise]), "-std=c11", *WARNINGS, *SYSTEM_HEADERS]


LINK = ["-fsanitize=address,undefined"] if SANITIZE else []

setup(
    ext_modules=[
        Extension(
            "huxleyd.audio._rt",
            sources=[
                "huxleyd/audio/csrc/_rtmodule.c",
                "huxleyd/audio/csrc/_rtout.c",
                "huxleyd/audio/csrc/_rtin.c",
                "huxleyd/audio/csrc/_feeder.c",
                "huxleyd/audio/csrc/_feedthread.c",
                "huxleyd/audio/csrc/_sourcering.c",
                "huxleyd/audio/csrc/_mixcore.c",
                "huxleyd/audio/csrc/_polyphase.c",
            ],
            depends=[
                "huxleyd/audio/csrc/_rt.h",
                "huxleyd/audio/csrc/_feeder.h",
                "huxleyd/audio/csrc/_feedthread.h",
                "huxleyd/audio/csrc/_sourcering.h",
                "huxleyd/audio/csrc/_mixcore.h",
                "huxleyd/audio/csrc/_polyphase.h",
            ],
            libraries=["portaudio", "m"],
            # the C feeder mixes with the same core as _dsp: numpy's rounding, no FMA
            extra_compile_args=[*flags("-O2"), "-ffp-contract=off"],
            extra_link_args=LINK,
            # required: the card's speaker is mixed by this extension's C feeder
            optional=False,
        ),
        Extension(
            "huxleyd.audio._aec",
            sources=["huxleyd/audio/csrc/_aec.c"],
            # Speex's echo canceller (libspeexdsp-dev): optional, without it the
            # wake word does not listen while the speaker plays (doctor says so)
            libraries=["speexdsp"],
            extra_compile_args=flags("-O2"),
            extra_link_args=LINK,
            optional=True,
        ),
        Extension(
            "huxleyd.audio._dsp",
            sources=[
                "huxleyd/audio/csrc/_dsp.c",
                "huxleyd/audio/csrc/_dspmix.c",
                "huxleyd/audio/csrc/_dspbuf.c",
                "huxleyd/audio/csrc/_mixcore.c",
                "huxleyd/audio/csrc/_polyphase.c",
            ],
            depends=[
                "huxleyd/audio/csrc/_dspbuf.h",
                "huxleyd/audio/csrc/_dspmix.h",
                "huxleyd/audio/csrc/_mixcore.h",
                "huxleyd/audio/csrc/_polyphase.h",
            ],
            libraries=["m"],
            # no fused multiply-add: numpy rounds every float32 operation on its own
            extra_compile_args=[*flags("-O3"), "-ffp-contract=off"],
            extra_link_args=LINK,
            # required: the mixer core is the only mixer (no numpy fallback mixes)
            optional=False,
        ),
    ]
)
