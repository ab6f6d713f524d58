"""The one exception tree of huxleyd.

::

    HuxleydError
    ├── ConfigError (ValueError)        bad or missing configuration; names file + key
    ├── SkillError                      a skill could not be loaded or misbehaved
    │   ├── SkillNotInstalledError (LookupError)
    │   ├── SkillCollisionError
    │   ├── SkillShapeError (TypeError)
    │   └── SkillSetupError
    ├── StorageError                    the persona database failed
    ├── AudioError                      audio devices and the engine
    │   └── AudioDeviceError (OSError)  a device could not be opened or vanished
    └── ProviderError                   the realtime provider session
        ├── ProviderProtocolError (ValueError)  a frame we could not understand
        └── ProviderConnectionError (ConnectionError)

Raise the most specific leaf and chain the cause (``raise ... from exc``).
"""

from __future__ import annotations


class HuxleydError(Exception):
    """Root of every error huxleyd raises on purpose."""


class ConfigError(HuxleydError, ValueError):
    """Configuration is invalid. The message names the file, the key and what was expected."""

    def __init__(self, file: str, key: str, problem: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {problem}")


class SkillError(HuxleydError):
    """A skill could not be loaded, set up or called."""


class SkillNotInstalledError(SkillError, LookupError):
    """A persona names a skill that no installed distribution provides."""


class SkillCollisionError(SkillError):
    """Two skills share a name, or two tools share a name across skills."""


class SkillShapeError(SkillError, TypeError):
    """An entry point resolved to something that is not a Skill."""


class SkillSetupError(SkillError):
    """A skill's ``setup`` raised."""


class StorageError(HuxleydError):
    """The persona database could not be opened, migrated or written."""


class AudioError(HuxleydError):
    """The audio engine or a backend failed."""


class AudioDeviceError(AudioError, OSError):
    """An audio device could not be opened, or it went away."""


class ProviderError(HuxleydError):
    """The realtime provider session failed."""


class ProviderProtocolError(ProviderError, ValueError):
    """A provider frame was malformed or missing a required field."""


class ProviderConnectionError(ProviderError, ConnectionError):
    """The connection to the provider could not be made or was lost."""
