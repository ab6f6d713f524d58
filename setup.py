"""The two C extensions, built from source by ``pip install`` with the system compiler.

- ``huxleyd.audio._rtout``: the speaker's and the mic's deadline out of the GIL,
  against PortAudio (``portaudio19-dev``, which the setup already installs for
  PyAudio). Optional: without it ``audio.backend = "auto"`` uses PyAudio.
- ``huxleyd.audio._dsp``: the audio thread's per-period arithmetic (mixing,
  limiter, resampling, PCM conversion) with the GIL held throughout. Needs only
  Python's headers. Optional too: without it the engine runs the numpy path
  (``huxleyd.audio.dsp`` says which), slower and less robust under a busy thread.

pyproject.toml holds the metadata; this file only declares the extensions.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "huxleyd.audio._rtout",
            sources=["huxleyd/audio/_rtout.c", "huxleyd/audio/_rtin.c"],
            depends=["huxleyd/audio/_rt.h"],
            libraries=["portaudio"],
            extra_compile_args=["-O2", "-std=c11", "-Wall"],
            # without a compiler the install still works: audio.backend = "auto"
            # then uses PyAudio's blocking I/O (and says so in the log)
            optional=True,
        ),
        Extension(
            "huxleyd.audio._dsp",
            sources=["huxleyd/audio/_dsp.c"],
            libraries=["m"],
            # no fused multiply-add: numpy rounds every float32 operation on its own
            extra_compile_args=["-O3", "-std=c11", "-Wall", "-ffp-contract=off"],
            optional=True,
        ),
    ]
)
