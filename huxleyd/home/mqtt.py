"""The speaker on an MQTT broker: Home Assistant's device, and the household.

Layer: adapter (the network, through aiomqtt). :class:`MqttLink` keeps one
connection to ``[mqtt] url`` for the daemon's life (a supervised runtime
task) and, on every connect:

- publishes ``online`` on its availability topic (retained; the connection's
  last will sets ``offline``, and a clean stop publishes it itself), its
  roster entry, Home Assistant's discovery configs and every state;
- listens for the commands Home Assistant sends (volume, mute, announce),
  for Home Assistant's birth message (``<discovery_prefix>/status`` =
  ``online``: discovery is sent again), and for the household's
  announcements to its room or to all, and receipts of its own.

A broker that is down, slow or refuses the credentials costs these
features only: the degraded record says why (``mqtt``: status, doctor,
journal), the turn and the skills go on, and the connection is retried on
the backoff of conventions rule 7.

Why aiomqtt, not paho-mqtt with its own loop thread: the daemon is one
asyncio loop, and everything the link does (set the volume, queue an
announcement, read the coordinator's state) happens on that loop. aiomqtt
runs paho's protocol code on the same loop, so there is no second thread,
no hand-off queue and no lock; a paho loop thread would need
``call_soon_threadsafe`` for every message and a thread to stop at exit, on
a Pi where threads cost memory and the GIL.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from huxleyd.degraded import Degraded
from huxleyd.home.discovery import Topics, discovery_messages
from huxleyd.home.household import (
    Announcement,
    BadMessage,
    Member,
    Receipt,
    parse_roster,
    roster_payload,
)
from huxleyd.home.settings import MqttSettings
from huxleyd.logs import get_logger
from huxleyd.providers.retry import backoff_delays, being_cancelled

log = get_logger("huxleyd.home")

PART = "mqtt"
"""The degraded record's part name for the broker."""

POLL_S = 1.0
"""How often the states are compared with what was published (a change made
elsewhere, by huxleyctl or a skill, reaches Home Assistant within this)."""

RECEIPT_WAIT_S = 5.0
"""How long an announcement's sender waits to hear that each room has it."""

MAX_ANNOUNCE_CHARS = 500


class Speaker(Protocol):
    """What the link asks of the daemon (:class:`huxleyd.home.speaker.DaemonSpeaker`)."""

    def state(self) -> str: ...
    async def get_volume(self) -> int: ...
    async def set_volume(self, level: int) -> int: ...
    def muted(self) -> bool: ...
    def set_muted(self, muted: bool) -> None: ...
    def last_problem(self) -> str: ...
    async def speak(self, announcement: Announcement, ttl_s: float) -> bool: ...
    def tell_watch(self, kind: str, **fields: Any) -> None: ...


class AnnounceRefused(Exception):
    """An announcement that cannot be sent (no broker, no such room); the message says why."""


def describe_mqtt_failure(exc: BaseException) -> str:
    """One line: why the broker cannot be used (never the password)."""
    rc = getattr(exc, "rc", None)
    text = " ".join(str(exc).split()) or type(exc).__name__
    # Only the broker's CONNACK answer (a ReasonCode) says "refused": a plain int
    # is paho's own error code, where 4 and 5 mean "not connected" (a broker gone).
    if isinstance(rc, ReasonCode) and rc.value in (134, 135, 140):
        return f"the broker refused the credentials ({text}): check username and password_file"
    return f"cannot reach the broker: {text}"[:300]


@dataclass(slots=True)
class _Published:
    state: str | None = None
    volume: int | None = None
    mute: bool | None = None
    problem: str | None = None


class MqttLink:
    """One speaker's connection to the broker (see the module docstring)."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        speaker: Speaker,
        topics: Topics,
        degraded: Degraded,
        version: str,
        wall: Callable[[], float] = time.time,
        delays: Callable[[], Iterable[float]] = backoff_delays,
        poll_s: float = POLL_S,
        config_file: str = "",
    ) -> None:
        self.settings = settings
        self.topics = topics
        self._speaker = speaker
        self._degraded = degraded
        self._version = version
        self._wall = wall
        self._delays = delays
        self._poll_s = poll_s
        self._config_file = config_file
        self._client: aiomqtt.Client | None = None
        self._published = _Published()
        self._wake = asyncio.Event()
        self._events: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue(maxsize=32)
        self._receipts: dict[str, asyncio.Queue[Receipt]] = {}
        self._roster: dict[str, Member] = {}
        self._online: dict[str, bool] = {}
        self._speaking: set[asyncio.Task[None]] = set()
        self.on_rooms_changed: Callable[[], None] | None = None
        """Told when the rooms with a speaker online changed (the tool's description)."""
        self.connects = 0
        """Connections made since start (a reconnect after a broker restart counts)."""
        self.state = "connecting"
        """One line for status."""

    # ------------------------------------------------------------ what the daemon tells it

    def changed(self) -> None:
        """A state may have changed (the coordinator's news): publish it soon."""
        self._wake.set()

    def button(self, event_type: str) -> None:
        """The button was pressed (``press``) or the wake word heard (``wake``)."""
        self._queue(self.topics.button, f'{{"event_type": "{event_type}"}}'.encode())

    def heard(self, text: str) -> None:
        """What a person said: published only when the owner turned it on."""
        if self.settings.publish_heard:
            self._queue(self.topics.heard, text[:255].encode())

    def _queue(self, topic: str, payload: bytes) -> None:
        if self._client is None:
            return  # an event is news now or never: not kept for a later connect
        if self._events.full():
            self._events.get_nowait()
        self._events.put_nowait((topic, payload))
        self._wake.set()

    # ------------------------------------------------------------ the household

    def rooms(self) -> list[str]:
        """The rooms with a speaker online now (this one included), sorted."""
        return sorted(
            {m.room for d, m in self._roster.items() if self._online.get(d, False)}
            | {self.topics.room}
        )

    async def announce(
        self, text: str, *, room: str | None, wait_s: float = RECEIPT_WAIT_S
    ) -> list[str]:
        """Send ``text`` to ``room``'s speakers (None: every speaker); one line per room.

        Raises :class:`AnnounceRefused` when there is no broker or no such room."""
        client = self._client
        text = " ".join(text.split())
        if not text:
            raise AnnounceRefused("nothing to announce")
        if len(text) > MAX_ANNOUNCE_CHARS:
            raise AnnounceRefused(f"an announcement is at most {MAX_ANNOUNCE_CHARS} characters")
        if client is None:
            raise AnnounceRefused(f"not connected to the broker ({self.state})")
        rooms = self.rooms()
        if room is not None and room not in rooms:
            raise AnnounceRefused(
                f"no speaker in room {room!r} is online (rooms: {', '.join(rooms)})"
            )
        targets = [room] if room is not None else rooms
        message = Announcement.new(
            text,
            device=self.topics.device,
            room=self.topics.room,
            now=self._wall(),
            ttl_s=self.settings.announce_ttl_s,
        )
        receipts: asyncio.Queue[Receipt] = asyncio.Queue()
        self._receipts[message.id] = receipts
        try:
            topic = self.topics.room_announce(room) if room else self.topics.all_announce
            await client.publish(
                topic, message.encode(), qos=1, retain=False, properties=self._expiry(message)
            )
            log.info(
                "announce_sent", id=message.id, to=room or "all", chars=len(text), rooms=targets
            )
            return await self._collect(receipts, targets, wait_s)
        finally:
            del self._receipts[message.id]

    async def _collect(
        self, receipts: asyncio.Queue[Receipt], rooms: list[str], wait_s: float
    ) -> list[str]:
        got: dict[str, Receipt] = {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while set(rooms) - set(got):
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                receipt = await asyncio.wait_for(receipts.get(), left)
            except TimeoutError:
                break
            got.setdefault(receipt.room, receipt)
        lines = [got[r].line() for r in rooms if r in got]
        lines += [f"{r}: no answer within {wait_s:g} s" for r in rooms if r not in got]
        return lines

    def _expiry(self, message: Announcement) -> Properties:
        """MQTT 5 message expiry: a broker holding it for a slow client drops it in time."""
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.MessageExpiryInterval = max(int(message.ttl_s), 1)
        return props

    # ------------------------------------------------------------ the connection

    async def run(self) -> None:
        """Connect, serve, and reconnect with backoff for the daemon's life."""
        delays = iter(self._delays())
        attempt = 0
        while True:
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except (aiomqtt.MqttError, OSError, ValueError) as exc:
                if being_cancelled():  # the cancel, raised as a failed disconnect
                    raise asyncio.CancelledError from exc
                attempt += 1
                self._client = None
                why = describe_mqtt_failure(exc)
                self.state = f"down: {why}"
                delay_s = next(delays)
                self._degraded.report(
                    PART,
                    f"{self.settings.url}: {why}; Home Assistant and the household are "
                    "left out, retried with backoff",
                    file=self._config_file or None,
                )
                log.warning(
                    "mqtt_down",
                    url=self.settings.url,
                    reason=why,
                    attempt=attempt,
                    next_try_in_s=round(delay_s, 1),
                )
                await asyncio.sleep(delay_s)
                continue
            delays, attempt = iter(self._delays()), 0

    def _password(self) -> str | None:
        path = self.settings.password_file
        if path is None:
            return None
        try:
            return path.read_text(encoding="utf-8").strip().splitlines()[0].strip()
        except (OSError, IndexError) as exc:
            raise ValueError(f"password_file {path}: cannot be read ({exc})") from None

    def _make_client(self) -> aiomqtt.Client:
        tls = None
        if self.settings.tls:
            ca = self.settings.ca_file
            tls = aiomqtt.TLSParameters(ca_certs=str(ca) if ca else None)
        return aiomqtt.Client(
            self.settings.host,
            self.settings.port,
            username=self.settings.username or None,
            password=self._password(),
            identifier=f"huxleyd-{self.topics.device}",
            protocol=aiomqtt.ProtocolVersion.V5,
            will=aiomqtt.Will(self.topics.availability, b"offline", qos=1, retain=True),
            keepalive=30,
            timeout=10.0,
            tls_params=tls,
        )

    async def _connect_and_serve(self) -> None:
        client = self._make_client()
        async with client:
            self._client = client
            self.connects += 1
            try:
                await self._on_connect(client)
                await self._serve(client)
            except asyncio.CancelledError:
                # A clean stop: say "offline" ourselves (a clean disconnect sends no will).
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        client.publish(self.topics.availability, b"offline", qos=1, retain=True),
                        1.0,
                    )
                raise
            finally:
                self._client = None

    async def _on_connect(self, client: aiomqtt.Client) -> None:
        t = self.topics
        for topic in (
            t.volume_set,
            t.mute_set,
            t.announce,
            f"{self.settings.discovery_prefix}/status",
            t.room_announce(t.room),
            t.all_announce,
            t.receipts(t.device),
            t.roster_all,
            t.availability_all,
        ):
            await client.subscribe(topic, qos=1)
        await client.publish(t.availability, b"online", qos=1, retain=True)
        await client.publish(
            t.roster, roster_payload(t.room, self.settings.display_name), qos=1, retain=True
        )
        await self._send_discovery(client)
        self._published = _Published()  # every state again
        self._degraded.clear(PART)
        self.state = f"connected to {self.settings.url} as room {t.room!r}"
        log.info("mqtt_connected", url=self.settings.url, room=t.room, device=t.device)

    async def _send_discovery(self, client: aiomqtt.Client) -> None:
        messages = discovery_messages(
            self.topics,
            discovery_prefix=self.settings.discovery_prefix,
            name=self.settings.display_name,
            version=self._version,
            publish_heard=self.settings.publish_heard,
        )
        for topic, payload in messages.items():
            await client.publish(topic, payload.encode(), qos=1, retain=True)
        log.info("mqtt_discovery_sent", entities=sum(1 for p in messages.values() if p))

    async def _serve(self, client: aiomqtt.Client) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._publisher(client))
            async for message in client.messages:
                try:
                    await self._on_message(client, str(message.topic), _payload(message.payload))
                except BadMessage as exc:
                    log.warning("mqtt_bad_message", topic=str(message.topic), error=str(exc))
            raise aiomqtt.MqttError("the broker closed the connection")

    async def _publisher(self, client: aiomqtt.Client) -> None:
        while True:
            while not self._events.empty():
                topic, payload = self._events.get_nowait()
                await client.publish(topic, payload, qos=0, retain=False)
            await self._publish_states(client)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll_s)

    async def _publish_states(self, client: aiomqtt.Client) -> None:
        t, last, speaker = self.topics, self._published, self._speaker
        state, volume = speaker.state(), await speaker.get_volume()
        mute, problem = speaker.muted(), speaker.last_problem()
        if state != last.state:
            await client.publish(t.state, state.encode(), qos=1, retain=True)
            last.state = state
        if volume != last.volume and volume >= 0:
            await client.publish(t.volume, str(volume).encode(), qos=1, retain=True)
            last.volume = volume
        if mute != last.mute:
            await client.publish(t.mute, b"ON" if mute else b"OFF", qos=1, retain=True)
            last.mute = mute
        if problem != last.problem:
            await client.publish(t.problem, problem[:255].encode(), qos=1, retain=True)
            last.problem = problem

    async def _on_message(self, client: aiomqtt.Client, topic: str, payload: bytes) -> None:
        t = self.topics
        if topic == t.volume_set:
            await self._set_volume(payload)
        elif topic == t.mute_set:
            value = payload.decode(errors="replace").strip().upper()
            if value in ("ON", "OFF"):
                self._speaker.set_muted(value == "ON")
                log.info("mic_mute_set", by="mqtt", muted=value == "ON")
            self._wake.set()
        elif topic == f"{self.settings.discovery_prefix}/status":
            if payload.strip() == b"online":  # Home Assistant (re)started: it forgot us
                log.info("home_assistant_online", effect="discovery sent again")
                await self._send_discovery(client)
                self._published = _Published()
                self._wake.set()
        elif topic == t.announce:
            text = payload.decode(errors="replace").strip()
            if text:
                message = Announcement.new(
                    text[:MAX_ANNOUNCE_CHARS],
                    device="home-assistant",
                    room="home assistant",
                    now=self._wall(),
                    ttl_s=self.settings.announce_ttl_s,
                )
                self._hear(client, message, reply=False)
        elif topic in (t.room_announce(t.room), t.all_announce):
            self._hear(client, Announcement.decode(payload), reply=True)
        elif topic == t.receipts(t.device):
            receipt = Receipt.decode(payload)
            queue = self._receipts.get(receipt.id)
            if queue is not None:
                queue.put_nowait(receipt)
        elif topic.startswith(f"{t.household}/speakers/"):
            rooms = self.rooms()
            self._on_roster(topic.rsplit("/", 1)[1], payload)
            self._rooms_maybe_changed(rooms)
        elif topic.endswith("/availability"):
            rooms = self.rooms()
            device = topic.split("/")[-2]
            self._online[device] = payload == b"online"
            self._rooms_maybe_changed(rooms)

    async def _set_volume(self, payload: bytes) -> None:
        try:
            level = round(float(payload.decode().strip()))
        except (ValueError, UnicodeDecodeError):
            log.warning("mqtt_bad_volume", payload=payload[:32].decode(errors="replace"))
            return
        level = min(max(level, 0), 100)
        before = await self._speaker.get_volume()
        really = await self._speaker.set_volume(level)
        log.info("volume_changed", by="mqtt", previous=before, requested=level, level=really)
        self._wake.set()

    def _rooms_maybe_changed(self, before: list[str]) -> None:
        if self.rooms() != before and self.on_rooms_changed is not None:
            self.on_rooms_changed()

    def _on_roster(self, device: str, payload: bytes) -> None:
        member = parse_roster(device, payload, self._online.get(device, False))
        if member is None:
            self._roster.pop(device, None)
        else:
            self._roster[device] = member

    # ------------------------------------------------------------ announcements heard

    def _hear(self, client: aiomqtt.Client, message: Announcement, *, reply: bool) -> None:
        now = self._wall()
        left_s = message.remaining_s(now)
        if left_s <= 0:
            detail = f"sent {message.age_s(now):.0f} s ago, older than its {message.ttl_s:g} s"
            self._dropped(message, detail)
            if reply:
                self._receipt(client, message, "dropped", detail)
            return
        log.info("announce_received", id=message.id, origin=message.from_room)
        self._speaker.tell_watch(
            "announce", id=message.id, origin=message.from_room, text=message.text, outcome="queued"
        )
        if reply:
            self._receipt(client, message, "queued")
        task = asyncio.get_running_loop().create_task(
            self._speak(client, message, left_s, reply=reply), name=f"announce-{message.id}"
        )
        self._speaking.add(task)
        task.add_done_callback(self._speaking.discard)

    async def _speak(
        self, client: aiomqtt.Client, message: Announcement, left_s: float, *, reply: bool
    ) -> None:
        heard = await self._speaker.speak(message, left_s)
        if heard:
            log.info("announce_spoken", id=message.id, origin=message.from_room)
            self._speaker.tell_watch(
                "announce", id=message.id, origin=message.from_room, text=message.text,
                outcome="heard",
            )  # fmt: skip
        else:
            self._dropped(message, f"not spoken within its {message.ttl_s:g} s")
        if reply and self._client is client:
            self._receipt(client, message, "heard" if heard else "dropped")

    def _dropped(self, message: Announcement, detail: str) -> None:
        log.warning("announce_dropped", id=message.id, origin=message.from_room, reason=detail)
        self._speaker.tell_watch(
            "announce", id=message.id, origin=message.from_room, text=message.text,
            outcome="dropped", reason=detail,
        )  # fmt: skip

    def _receipt(
        self, client: aiomqtt.Client, message: Announcement, outcome: Any, detail: str = ""
    ) -> None:
        receipt = Receipt(message.id, self.topics.room, self.topics.device, outcome, detail)
        self._queue(self.topics.receipts(message.from_device), receipt.encode())


def _payload(raw: object) -> bytes:
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    if raw is None:
        return b""
    return str(raw).encode()
