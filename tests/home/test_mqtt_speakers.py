"""Speakers on a real Mosquitto: Home Assistant's view of them, and a household.

One broker for the module (Debian's ``mosquitto`` on a free loopback port,
a password file made by ``mosquitto_passwd``) and two real daemons
(``python -m huxleyd``: the WAV sound card, the simulator, mock pins): the
kitchen and the office. What is asserted is what crosses the seams: the
payloads read back from the broker, the daemons' ``huxleyctl`` answers,
their ``watch`` feeds, and the speaker WAV files.

The tests run in file order on the shared daemons; each says what state it
leaves behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from huxleyd.audio.backends.growing_wav import pcm_on_disk
from tests.e2e.process import DaemonProcess, ctl, write_daemon_config
from tests.home.broker import MISSING, PASSWORD, USER, Broker, Watcher

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

SCENARIO = 'default_reply = "Dinner is ready, says the simulator."\n'
OFFICE = (
    SCENARIO
    + """
[[turns]]
hear = "hello"
[[turns.responses]]
say = "Hello there."

[[turns]]
hear = "tell the kitchen dinner is ready"
[[turns.responses]]
tool_calls = [{ name = "announce_to_room", arguments = { room = "kitchen", text = "Dinner is served" } }]
[[turns.responses]]
say = "I told the kitchen."
"""
)


@dataclass
class Speaker:
    room: str
    folder: Path
    daemon: DaemonProcess
    device: str = ""

    @property
    def socket(self) -> Path:
        return self.folder / "control.sock"

    @property
    def base(self) -> str:
        return f"huxley/{self.device}"

    def ctl(self, *args: str, exit_codes: tuple[int, ...] = (0,)) -> str:
        return ctl(self.socket, *args, exit_codes=exit_codes)

    def status(self) -> dict[str, object]:
        return dict(json.loads(self.ctl("status", "--json")))

    def samples(self) -> np.ndarray:
        return np.frombuffer(pcm_on_disk(self.folder / "huxleyd-speaker.wav"), dtype="<i2")


def start_speaker(
    tmp: Path, broker: Broker, room: str, *, password: str = PASSWORD, scenario: str = SCENARIO
) -> Speaker:
    folder = tmp / room
    folder.mkdir()
    (folder / "mqtt.password").write_text(password + "\n")
    config = write_daemon_config(folder, scenario=scenario)
    config.write_text(
        config.read_text()
        + f'[mqtt]\nurl = "{broker.url}"\nusername = "{USER}"\n'
        + f'password_file = "mqtt.password"\nroom = "{room}"\n'
    )
    return Speaker(room, folder, DaemonProcess(config))


CLI = (sys.executable, "-m", "huxleyd.control.cli")


def topic_is(topic: str) -> Callable[[str, bytes], bool]:
    return lambda t, p: t == topic


def read_device(speaker: Speaker) -> str:
    return (speaker.folder / "state" / "home-id").read_text().strip()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(tmp_path_factory.mktemp("broker"))
    b.start()
    yield b
    b.kill()


@pytest.fixture(scope="module")
def watcher(broker: Broker) -> Iterator[Watcher]:
    w = Watcher(broker, "#", "$SYS/never")
    yield w
    w.close()


@pytest.fixture(scope="module")
def house(
    broker: Broker, watcher: Watcher, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Speaker]]:
    tmp = tmp_path_factory.mktemp("house")
    # The office starts with a wrong broker password (test_refused_credentials).
    kitchen = start_speaker(tmp, broker, "kitchen")
    office = start_speaker(tmp, broker, "office", password="not-the-password", scenario=OFFICE)
    try:
        kitchen.daemon.wait_for_log("mqtt_discovery_sent", 60)
        office.daemon.wait_for_log("mqtt_down", 60)
        kitchen.device = read_device(kitchen)
        office.device = read_device(office)
        yield {"kitchen": kitchen, "office": office}
    finally:
        for s in (kitchen, office):
            s.daemon.terminate()


def test_refused_credentials_cost_only_the_home_features(house: dict[str, Speaker]) -> None:
    office = house["office"]
    status = office.status()
    problems = " ".join(str(p) for p in status["problems"])  # type: ignore[attr-defined]
    assert "mqtt" in problems and "refused the credentials" in problems, problems
    assert (
        PASSWORD not in office.daemon.output() and "not-the-password" not in office.daemon.output()
    )
    # The password file is read again on every try: fixed, it connects by itself.
    (office.folder / "mqtt.password").write_text(PASSWORD + "\n")
    # Meanwhile the turn goes on: a text turn is answered.
    out = office.ctl("say", "hello", exit_codes=(0,))
    assert "Hello there." in out
    office.daemon.wait_for_log("mqtt_connected", 30)
    deadline = time.monotonic() + 10
    while office.status()["problems"]:
        assert time.monotonic() < deadline, office.status()["problems"]
        time.sleep(0.1)


def test_discovery_payloads_read_back_from_the_broker(
    house: dict[str, Speaker], broker: Broker
) -> None:
    kitchen = house["kitchen"]
    fresh = Watcher(broker, "homeassistant/#")  # a late subscriber gets what was retained
    try:
        prefix = f"homeassistant/%s/huxley_{kitchen.device}/%s/config"
        wanted = {
            ("sensor", "state"),
            ("number", "volume"),
            ("switch", "mute"),
            ("sensor", "problem"),
            ("event", "button"),
            ("notify", "announce"),
        }
        configs: dict[tuple[str, str], dict[str, object]] = {}
        for component, obj in wanted:
            topic = prefix % (component, obj)
            _, payload, retained = fresh.wait_for(topic_is(topic), 10)
            assert retained, f"{topic} is not retained"
            configs[(component, obj)] = json.loads(payload)
        for (_component, obj), config in configs.items():
            assert config["unique_id"] == f"huxley_{kitchen.device}_{obj}"
            assert config["availability_topic"] == f"{kitchen.base}/availability"
            device = config["device"]
            assert isinstance(device, dict) and device["identifiers"] == [
                f"huxley_{kitchen.device}"
            ]
        assert configs[("sensor", "state")]["options"] == [
            "idle",
            "listening",
            "thinking",
            "speaking",
            "offline",
            "degraded",
        ]
        volume = configs[("number", "volume")]
        assert (volume["min"], volume["max"], volume["command_topic"]) == (
            0,
            100,
            f"{kitchen.base}/volume/set",
        )
        # Nothing a person says is published unless the owner turns it on.
        heard = prefix % ("sensor", "heard")
        assert all(p == b"" for t, p, _ in fresh.seen(lambda t, p: t == heard))
    finally:
        fresh.close()
    online = Watcher(broker, f"{kitchen.base}/availability", f"{kitchen.base}/state")
    try:
        online.wait_for(lambda t, p: t.endswith("availability") and p == b"online", 5)
        online.wait_for(lambda t, p: t.endswith("/state") and p == b"idle", 5)
    finally:
        online.close()


def test_home_assistant_sets_the_volume_and_the_mute(
    house: dict[str, Speaker], watcher: Watcher
) -> None:
    kitchen = house["kitchen"]
    mark = watcher.count()
    watcher.publish(f"{kitchen.base}/volume/set", "37")
    watcher.wait_for(lambda t, p: t == f"{kitchen.base}/volume" and p == b"37", 10, after=mark)
    assert kitchen.ctl("volume").strip() == "37"
    watcher.publish(f"{kitchen.base}/mute/set", "ON")
    watcher.wait_for(lambda t, p: t == f"{kitchen.base}/mute" and p == b"ON", 10, after=mark)
    assert "muted" in kitchen.ctl("mute")
    watcher.publish(f"{kitchen.base}/mute/set", "OFF")
    watcher.wait_for(lambda t, p: t == f"{kitchen.base}/mute" and p == b"OFF", 10, after=mark)
    # huxleyctl's change reaches Home Assistant too
    kitchen.ctl("volume", "55")
    watcher.wait_for(lambda t, p: t == f"{kitchen.base}/volume" and p == b"55", 10, after=mark)
    # The button is an event automations can use.
    kitchen.ctl("ptt", "tap")
    _, event, retained = watcher.wait_for(
        lambda t, p: t == f"{kitchen.base}/button", 10, after=mark
    )
    assert json.loads(event) == {"event_type": "press"} and not retained
    kitchen.daemon.wait_for_log("source=ptt", 20)  # that turn is over before the next test


class Watch:
    """``huxleyctl watch --json`` as a process, its lines read at the end."""

    def __init__(self, speaker: Speaker) -> None:
        self.out = speaker.folder / f"watch-{time.monotonic_ns()}.jsonl"
        self.file = self.out.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "huxleyd.control.cli",
                "--socket",
                str(speaker.socket),
                "watch",
                "--json",
            ],
            stdout=self.file,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while "watching" not in self.out.read_text():
            assert time.monotonic() < deadline, "watch did not start"
            time.sleep(0.05)

    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.out.read_text().splitlines() if line.strip()]

    def wait_for(self, kind: str, timeout_s: float = 30.0, **fields: object) -> dict[str, object]:
        deadline = time.monotonic() + timeout_s
        while True:
            for event in self.events():
                if event.get("kind") == kind and all(event.get(k) == v for k, v in fields.items()):
                    return event
            assert time.monotonic() < deadline, f"no {kind} {fields} in {self.events()}"
            time.sleep(0.05)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.file.close()


def loud_ms(samples: np.ndarray, rate_hz: int = 48_000) -> float:
    """Milliseconds of the samples that are not near silence (10 ms blocks)."""
    block = rate_hz // 100
    count = len(samples) // block
    blocks = samples[: count * block].astype(np.float64).reshape(count, block)
    rms = np.sqrt(np.mean(blocks**2, axis=1))
    return float(np.sum(rms > 300.0) * 10)


def test_home_assistant_announces_and_the_speaker_says_it(
    house: dict[str, Speaker], watcher: Watcher
) -> None:
    kitchen = house["kitchen"]
    watch = Watch(kitchen)
    try:
        before = len(kitchen.samples())
        watcher.publish(f"{kitchen.base}/announce", "The washing machine is done.")
        queued = watch.wait_for("announce", outcome="queued")
        assert queued["text"] == "The washing machine is done."
        watch.wait_for("announce", outcome="heard")
        said = watch.wait_for("said")
        assert "simulator" in str(said["text"])
    finally:
        watch.close()
    assert loud_ms(kitchen.samples()[before:]) > 300  # the speech is on the speaker


def test_one_speaker_announces_to_another(house: dict[str, Speaker], watcher: Watcher) -> None:
    kitchen, office = house["kitchen"], house["office"]
    watch = Watch(kitchen)
    try:
        before = len(kitchen.samples())
        office_before = len(office.samples())
        out = office.ctl("announce", "--room", "kitchen", "Dinner", "is", "ready")
        assert out.strip() == "kitchen: will be spoken", out
        event = watch.wait_for("announce", outcome="heard")
        assert (event["text"], event["origin"]) == ("Dinner is ready", "office")
        receipt = watcher.wait_for(
            lambda t, p: t == f"huxley/household/receipts/{office.device}" and b'"heard"' in p, 20
        )
        assert json.loads(receipt[1])["room"] == "kitchen"
    finally:
        watch.close()
    assert loud_ms(kitchen.samples()[before:]) > 300
    assert loud_ms(office.samples()[office_before:]) == 0  # only the kitchen said it


def test_announcements_are_never_retained(house: dict[str, Speaker], broker: Broker) -> None:
    """A speaker (or Home Assistant) subscribing later finds no announcement to replay."""
    late = Watcher(broker, "huxley/household/#", "huxley/+/announce")
    try:
        time.sleep(0.5)  # retained messages arrive right after the subscription
        replayed = late.seen(lambda t, p: t.endswith("/announce") or "/receipts/" in t)
        assert replayed == []
        assert late.seen(lambda t, p: "/speakers/" in t)  # the roster is retained
    finally:
        late.close()


def test_the_model_tells_another_room(house: dict[str, Speaker]) -> None:
    """ "Tell the kitchen dinner is ready": the model's tool, through the skill host."""
    kitchen, office = house["kitchen"], house["office"]
    watch = Watch(kitchen)
    try:
        out = office.ctl("say", "tell the kitchen dinner is ready")
        assert "I told the kitchen." in out
        event = watch.wait_for("announce", outcome="heard", text="Dinner is served")
        assert event["origin"] == "office"
    finally:
        watch.close()
    called = [x for x in office.daemon.output().splitlines() if "tool=announce_to_room" in x]
    assert called and "error=None" in called[-1], called


def test_an_unknown_room_is_refused_with_the_rooms_there_are(house: dict[str, Speaker]) -> None:
    office = house["office"]
    # An unknown room is refused with the rooms there are.
    refused = subprocess.run(
        [*CLI, "--socket", str(office.socket), "announce", "--room", "garage", "hello"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 1
    assert "no speaker in room 'garage'" in refused.stderr and "kitchen, office" in refused.stderr


def test_an_announcement_too_old_is_dropped_and_said(
    house: dict[str, Speaker], watcher: Watcher
) -> None:
    kitchen = house["kitchen"]
    watch = Watch(kitchen)
    try:
        before = len(kitchen.samples())
        stale = {
            "id": "stale1",
            "text": "Lunch is ready",
            "from_device": "tester",
            "from_room": "hall",
            "sent_at": time.time() - 3600,
            "ttl_s": 60,
        }
        watcher.publish("huxley/household/room/kitchen/announce", json.dumps(stale))
        event = watch.wait_for("announce", outcome="dropped")
        assert "older than its 60 s" in str(event["reason"])
        receipt = watcher.wait_for(lambda t, p: t == "huxley/household/receipts/tester", 10)
        assert json.loads(receipt[1])["outcome"] == "dropped"
        kitchen.daemon.wait_for_log("announce_dropped", 10)
        time.sleep(1.0)  # what would have been spoken by now
    finally:
        watch.close()
    assert loud_ms(kitchen.samples()[before:]) == 0
    assert not [e for e in watch.events() if e.get("kind") == "said"]


def test_home_assistant_back_online_gets_discovery_again(
    house: dict[str, Speaker], watcher: Watcher
) -> None:
    kitchen = house["kitchen"]
    mark = watcher.count()
    watcher.publish("homeassistant/status", "online")
    watcher.wait_for(
        lambda t, p: t == f"homeassistant/number/huxley_{kitchen.device}/volume/config",
        10,
        after=mark,
    )


def wait_for_count(daemon: DaemonProcess, text: str, times: int, timeout_s: float = 30) -> None:
    """Until ``text`` is in the daemon's output ``times`` times (30 s bound)."""
    deadline = time.monotonic() + timeout_s
    while daemon.output().count(text) < times:
        assert time.monotonic() < deadline, f"{text} logged fewer than {times} times"
        time.sleep(0.1)


def test_the_broker_killed_and_back(house: dict[str, Speaker], broker: Broker) -> None:
    kitchen = house["kitchen"]
    broker.kill()
    kitchen.daemon.wait_for_log("mqtt_down", 30)
    status = kitchen.status()  # still answering, and saying why the home part is out
    assert "mqtt" in " ".join(str(p) for p in status["problems"])  # type: ignore[attr-defined]
    assert status["state"] == "idle"
    assert "simulator" in kitchen.ctl("say", "are you there")  # the turn goes on
    doctor = kitchen.ctl("doctor", exit_codes=(0, 1))
    assert "mqtt" in doctor and "cannot reach the broker" in doctor, doctor
    connects = kitchen.daemon.output().count("mqtt_connected")
    broker.start()  # no persistence: nothing retained survived; what we see is sent again
    fresh = Watcher(broker, "homeassistant/#", f"{kitchen.base}/availability")
    try:
        fresh.wait_for(
            lambda t, p: t == f"homeassistant/sensor/huxley_{kitchen.device}/state/config", 30
        )
        fresh.wait_for(lambda t, p: t.endswith("/availability") and p == b"online", 10)
    finally:
        fresh.close()
    # "online" is published before the reconnect is logged (mqtt.py sends every
    # state first): under load the line can come a moment after the broker saw it.
    wait_for_count(kitchen.daemon, "mqtt_connected", connects + 1)
    assert not kitchen.status()["problems"]


def test_availability_goes_offline_when_the_daemon_stops(
    house: dict[str, Speaker], broker: Broker, watcher: Watcher
) -> None:
    office = house["office"]
    office.daemon.wait_for_log("mqtt_connected", 30)
    # after the broker restart, the office reconnects too
    wait_for_count(office.daemon, "mqtt_connected", 2)
    topic = f"{office.base}/availability"
    assert office.daemon.terminate() == 0
    # Nothing a person said was published all along (publish_heard is off).
    assert not watcher.seen(lambda t, p: t.endswith("/heard"))
    late = Watcher(broker, topic)  # retained: what a Home Assistant starting now reads
    try:
        late.wait_for(lambda t, p: t == topic and p == b"offline", 10)
    finally:
        late.close()
