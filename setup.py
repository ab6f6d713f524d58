"""The one C extension: the speaker's deadline out of the GIL (see huxleyd/audio/_rtout.c).

pyproject.toml holds the metadata; this file only declares the extension, built
from source by ``pip install`` with the system compiler against PortAudio
(``portaudio19-dev``, which the setup already installs for PyAudio).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "huxleyd.audio._rtout",
            sources=["huxleyd/audio/_rtout.c"],
            libraries=["portaudio"],
            extra_compile_args=["-O2", "-std=c11", "-Wall"],
            # without a compiler the install still works: audio.backend = "auto"
            # then uses PyAudio's blocking I/O (and says so in the log)
            optional=True,
        )
    ]
)
