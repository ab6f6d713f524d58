"""The C mixer core's struct (``mc_mixer``, ``csrc/_mixcore.h``), packed from the
Python mixer and unpacked back into it.

C reads no Python attribute: :class:`CoreState` packs the requests, the state and
the rings' positions of a :class:`~huxleyd.audio.mixer.Mixer` and its four
channels into one buffer laid out as the core's struct, and after a period reads
the state and the period's report (pull positions, dry counts, what a flush
dropped) back into the same attributes, so the rest of the engine reads the same
fields whoever mixed. The layout (each core field's byte offset and type) is the
extension's (``_dsp.MIXER_FIELDS``, ``SOURCE_FIELDS``, ``SOURCE_OFFSETS``,
``STATE_SIZE``, from ``offsetof``); which attribute each core field is, is listed
once, here (:data:`MIXER_ATTRS`, :data:`SOURCE_ATTRS`). A core field without an
attribute, or an attribute without a core field, is refused when the mixer is
built.

The same bytes are what the C feeder takes when the device opens and with each
request (:meth:`CoreState.snapshot`), and what it gives back when it stops
(:meth:`CoreState.restore`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from enum import Enum
from types import ModuleType
from typing import Any, Protocol


class Mixing(Protocol):
    """What :class:`CoreState` reads and writes: the mixer's own fields (listed in
    :data:`MIXER_ATTRS`), its ``limiter`` and its four ``channels`` (each with its
    ``ring``). :class:`~huxleyd.audio.mixer.Mixer` is one."""

    @property
    def channels(self) -> Mapping[Any, Any]: ...

    @property
    def limiter(self) -> Any: ...


class Way(Enum):
    """Which way a core field crosses: requests and configuration only in, state both
    ways, the period's report only out."""

    IN = "in"
    BOTH = "both"
    OUT = "out"


IN, BOTH, OUT = Way.IN, Way.BOTH, Way.OUT

Owner = str
"""On which object the attribute is: ``"self"`` (the mixer or the channel),
``"ring"`` (the channel's ring), ``"limiter"`` (the mixer's), ``"gate"`` (an item of
the mixer's ``_req_gate`` tuple: the attribute is its index), ``"zero"`` (no
attribute: Python leaves the field 0)."""

SOURCE_ATTRS: dict[str, tuple[Owner, str, Way]] = {
    "capacity": ("ring", "capacity", IN),
    "read_pos": ("ring", "read_pos", BOTH),
    "write_pos": ("ring", "write_pos", IN),
    "req_gain": ("self", "_req_gain", IN),
    "req_ducked": ("self", "_req_ducked", IN),
    "req_paused": ("self", "_req_paused", IN),
    "req_flush_seq": ("self", "_req_flush_seq", IN),
    "req_flush_to": ("self", "req_flush_to", IN),
    "held": ("zero", "", IN),  # the C feeder's playout buffer: never Python's
    "gain": ("self", "_gain", BOTH),
    "duck_db": ("self", "_duck_db", BOTH),
    "paused": ("self", "_paused", BOTH),
    "flowing": ("self", "_flowing", BOTH),
    "flush_seq": ("self", "_flush_seq", BOTH),
    "pull_start": ("self", "pull_start", OUT),
    "pull_offset": ("self", "pull_offset", OUT),
    "pull_count": ("self", "pull_count", BOTH),  # last period's: the gate reads it
    "dry_count": ("self", "dry_count", BOTH),
    "skip_from": ("self", "skip_from", OUT),
    "skip_to": ("self", "skip_to", OUT),
}
"""Each core source field (``mc_source``): the :class:`~.channel.SourceChannel`
attribute it is."""

MIXER_ATTRS: dict[str, tuple[Owner, str, Way]] = {
    "period": ("self", "period_samples", IN),
    "ramp": ("self", "ramp_samples", IN),
    "depth_db": ("self", "duck_depth_db", IN),
    "attack_step_db": ("self", "attack_step_db", IN),
    "release_step_db": ("self", "release_step_db", IN),
    "threshold": ("limiter", "threshold", IN),
    "release_step": ("limiter", "_release_step", IN),
    "knee": ("limiter", "_knee", IN),
    "req_master": ("self", "_req_master_gain", IN),
    "req_gate_seq": ("gate", "0", IN),
    "req_gate_earcon_end": ("gate", "1", IN),
    "req_gate_speech_pos": ("gate", "2", IN),
    "master": ("self", "_master_gain", BOTH),
    "gate_seq": ("self", "_gate_seq", BOTH),
    "gate_earcon_end": ("self", "_gate_earcon_end", BOTH),
    "gate_speech_pos": ("self", "_gate_speech_pos", BOTH),
    "gate_active": ("self", "_gate_active", BOTH),
    "limiter_gain": ("limiter", "gain", BOTH),
    "limiter_active": ("limiter", "active_periods", BOTH),
}
"""Each core mixer field (``mc_mixer``): the :class:`~.mixer.Mixer` attribute it is."""

_SIZES = {"Q": 8, "d": 8, "i": 4}


class CoreState:
    """One mixer's core struct: :meth:`pack` before a period, :meth:`unpack` after."""

    def __init__(self, kernel: ModuleType, mixer: Mixing) -> None:
        fields: list[tuple[int, str, str, Any, Owner, str, Way]] = []
        self._add(fields, kernel.MIXER_FIELDS, 0, MIXER_ATTRS, mixer, "Mixer")
        for name, base in zip(kernel.SOURCE_ORDER, kernel.SOURCE_OFFSETS, strict=True):
            self._add(fields, kernel.SOURCE_FIELDS, base, SOURCE_ATTRS, mixer.channels[name], "")
        fields.sort()
        at = 0
        for offset, _, code, *_ in fields:
            if offset < at:
                raise ValueError(f"the core's fields overlap at byte {offset}")
            at = offset + _SIZES[code]
        size = int(kernel.STATE_SIZE)
        if at > size:
            raise ValueError(f"the core's fields end at byte {at}, past its {size} bytes")
        self.buffer = bytearray(size)
        """The struct as ``_dsp.mix_period`` takes it (packed, then the period's result).
        Bytes no field covers (the pointers, padding) stay zero."""
        # one small struct per field, packed and unpacked one at a time: a period
        # creates no list or tuple of them (the real-time contract: nothing that size)
        self._ins = [
            (struct.Struct("=" + code), offset, self._getter(obj, owner, attr, code), label, attr)
            for offset, label, code, obj, owner, attr, way in fields
            if way is not OUT
        ]
        self._outs = [
            (struct.Struct("=" + code), offset, self._setter(obj, owner, attr, code))
            for offset, _, code, obj, owner, attr, way in fields
            if way is not IN
        ]

    @staticmethod
    def _add(
        fields: list[tuple[int, str, str, Any, Owner, str, Way]],
        layout: tuple[tuple[str, int, str], ...],
        base: int,
        attrs: dict[str, tuple[Owner, str, Way]],
        obj: Any,
        what: str,
    ) -> None:
        names = {name for name, _, _ in layout}
        if names != set(attrs):
            raise ValueError(
                f"the core's fields and corestate's table differ: in C only "
                f"{sorted(names - set(attrs))}, in the table only {sorted(set(attrs) - names)}"
            )
        for name, offset, code in layout:
            owner, attr, way = attrs[name]
            target = obj.ring if owner == "ring" else obj.limiter if owner == "limiter" else obj
            label = what or type(obj).__name__
            if owner == "ring":
                label = type(obj.ring).__name__
            elif owner == "limiter":
                label = type(obj.limiter).__name__
            fields.append((base + offset, label, code, target, owner, attr, way))

    @staticmethod
    def _getter(obj: Any, owner: Owner, attr: str, code: str) -> Callable[[], Any]:
        if owner == "zero":
            return lambda: 0
        if owner == "gate":
            index = int(attr)
            return lambda: obj._req_gate[index]
        if code == "i":
            return lambda: 1 if getattr(obj, attr) else 0
        return lambda: getattr(obj, attr)

    @staticmethod
    def _setter(obj: Any, owner: Owner, attr: str, code: str) -> Callable[[Any], None]:
        if code == "i":
            return lambda value: setattr(obj, attr, bool(value))
        return lambda value: setattr(obj, attr, value)

    def pack(self, buffer: bytearray | None = None) -> bytearray:
        """The mixer's requests and state now, into ``buffer`` (default :attr:`buffer`;
        returned)."""
        buffer = self.buffer if buffer is None else buffer
        for field, offset, get, label, attr in self._ins:
            try:
                field.pack_into(buffer, offset, get())
            except struct.error:
                kind = "a whole number >= 0" if field.format.endswith("Q") else "a number"
                raise ValueError(
                    f"mix_period: {label}.{attr} must be {kind}, got {get()!r}"
                ) from None
        return buffer

    def snapshot(self) -> bytes:
        """:meth:`pack` into a fresh buffer, as bytes (what the C feeder takes, from any
        thread); the report's fields zero, as no period has mixed on it yet. Not per
        period: it allocates."""
        return bytes(self.pack(bytearray(len(self.buffer))))

    def unpack(self, data: bytes | bytearray | None = None) -> None:
        """The state and the report in ``data`` (default :attr:`buffer`) back into the
        mixer's attributes."""
        source = self.buffer if data is None else data
        if len(source) != len(self.buffer):
            raise ValueError(f"a core state is {len(self.buffer)} bytes, got {len(source)}")
        for field, offset, put in self._outs:
            put(field.unpack_from(source, offset)[0])
