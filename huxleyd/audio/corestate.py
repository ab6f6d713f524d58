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
    """Which way a core field crosses: configuration in once (when the mixer is built),
    requests in each period, state both ways, the period's report only out."""

    FIXED = "fixed"
    IN = "in"
    BOTH = "both"
    OUT = "out"


FIXED, IN, BOTH, OUT = Way.FIXED, Way.IN, Way.BOTH, Way.OUT

Owner = str
"""On which object the attribute is: ``"self"`` (the mixer or the channel),
``"ring"`` (the channel's ring), ``"limiter"`` (the mixer's), ``"gate"`` (an item of
the mixer's ``_req_gate`` tuple: the attribute is its index), ``"zero"`` (no
attribute: Python leaves the field 0)."""

SOURCE_ATTRS: dict[str, tuple[Owner, str, Way]] = {
    "capacity": ("ring", "capacity", FIXED),
    "read_pos": ("ring", "read_pos", BOTH),
    "write_pos": ("ring", "write_pos", IN),
    "req_gain": ("self", "_req_gain", IN),
    "req_ducked": ("self", "_req_ducked", IN),
    "req_paused": ("self", "_req_paused", IN),
    "req_flush_seq": ("self", "_req_flush_seq", IN),
    "req_flush_to": ("self", "req_flush_to", IN),
    "held": ("zero", "", FIXED),  # the C feeder's playout buffer: never Python's
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
    "period": ("self", "period_samples", FIXED),
    "ramp": ("self", "ramp_samples", FIXED),
    "depth_db": ("self", "duck_depth_db", FIXED),
    "attack_step_db": ("self", "attack_step_db", FIXED),
    "release_step_db": ("self", "release_step_db", FIXED),
    "threshold": ("limiter", "threshold", FIXED),
    "release_step": ("limiter", "_release_step", FIXED),
    "knee": ("limiter", "_knee", FIXED),
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
        self._fields = fields
        self._checks = [
            (struct.Struct("=" + code), self._getter(obj, owner, attr, code), label, attr)
            for _, label, code, obj, owner, attr, _ in fields
        ]
        # Straight-line code, generated once: one pack_into or unpack_from per field,
        # no loop, no list or tuple of them (the real-time contract), and as little
        # Python per period as the fields allow (each bytecode is a point where a busy
        # thread can take the GIL from the audio thread). Configuration is packed once.
        self._pack_fixed = self._compile("fixed", fields)
        self._pack_period = self._compile("period", fields)
        self._unpack = self._compile("unpack", fields)
        self._pack_fixed(self.buffer)

    @staticmethod
    def _compile(
        kind: str, fields: list[tuple[int, str, str, Any, Owner, str, Way]]
    ) -> Callable[[Any], None]:
        names: dict[int, str] = {}
        scope: dict[str, Any] = {"bool": bool}
        for code in _SIZES:
            scope[f"P{code}"] = struct.Struct("=" + code).pack_into
            scope[f"U{code}"] = struct.Struct("=" + code).unpack_from
        lines = ["def run(b):"]
        for offset, _, code, obj, owner, attr, way in fields:
            if owner == "zero":
                continue  # stays 0: the buffers start zeroed and nothing writes it here
            name = names.setdefault(id(obj), f"o{len(names)}")
            scope[name] = obj
            value = f"{name}._req_gate[{int(attr)}]" if owner == "gate" else f"{name}.{attr}"
            if kind == "unpack":
                if way in (BOTH, OUT):
                    got = f"U{code}(b, {offset})[0]"
                    lines.append(f"    {value} = {'bool(' + got + ')' if code == 'i' else got}")
            elif (way is FIXED) == (kind == "fixed") and way is not OUT:
                lines.append(f"    P{code}(b, {offset}, {value})")
        lines.append("    return None")
        exec("\n".join(lines), scope)  # generated from the two tables above, nothing else
        run: Callable[[Any], None] = scope["run"]
        return run

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
        """The mixer's requests and state now, into ``buffer`` (default :attr:`buffer`,
        whose configuration was packed once; returned)."""
        try:
            if buffer is None:
                buffer = self.buffer
            else:
                self._pack_fixed(buffer)
            self._pack_period(buffer)
        except struct.error:
            raise self._refused() from None
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
        self._unpack(source)

    def _refused(self) -> ValueError:
        """Which field the struct could not take, by its attribute's name."""
        for field, get, label, attr in self._checks:
            value = get()
            try:
                field.pack(value)
            except struct.error:
                kind = "a whole number >= 0" if field.format.endswith("Q") else "a number"
                return ValueError(f"mix_period: {label}.{attr} must be {kind}, got {value!r}")
        return ValueError("mix_period: the mixer's state does not fit the core's struct")
