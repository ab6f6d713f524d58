"""The one exception tree of huxleyd.

::

    HuxleydError
    ├── ConfigError (ValueError)        bad or missing configuration; names file + key
    ├── SkillError                      a skill could not be loaded or misbehaved
    │   ├── SkillNotInstalledError (LookupError)
    │   ├── SkillCollisionError
    │   ├── SkillShapeError (TypeError)
    │   ├── SkillSetupError
    │   └── SkillHostError              the skill host process died, hung or flooded
    ├── StorageError                    the persona database failed
    ├── AudioError                      audio devices and the engine
    │   └── AudioDeviceError (OSError)  a device could not be opened or vanished
    ├── ProviderError                   the realtime provider session
    │   ├── ProviderProtocolError (ValueError)  a frame we could not understand
    │   └── ProviderConnectionError (ConnectionError)
    └── ControlError                    the control socket and huxleyctl
        ├── ControlProtocolError (ValueError)          a line that breaks the wire format
        ├── ControlSocketInUseError (OSError)          another daemon listens on the path
        ├── DaemonUnreachableError (ConnectionError)   no daemon, or no permission
        └── CommandFailedError                         a command was refused or failed

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


class SkillHostError(SkillError):
    """A third-party skill's host process could not start, died, hung or flooded the link."""


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


class ControlError(HuxleydError):
    """Root of the control socket's errors."""


class ControlProtocolError(ControlError, ValueError):
    """A request or reply line does not follow the wire format.

    The message is one line that says what was wrong and what was expected;
    ``request_id`` is the id of the offending request when it could be read.
    """

    def __init__(self, message: str, *, request_id: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class ControlSocketInUseError(ControlError, OSError):
    """The socket path is taken: a live daemon listens there, or it is not a socket."""


class DaemonUnreachableError(ControlError, ConnectionError):
    """``huxleyctl`` could not talk to the daemon (not running, or permission denied)."""


class CommandFailedError(ControlError):
    """A command was refused or failed; the message is one line for the user.

    The daemon's handler raises it (``say`` while offline, say) and the
    server sends the message as the error reply; the client raises it when
    a reply says ``ok: false``.
    """
