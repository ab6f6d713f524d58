"""A real Mosquitto (Debian's ``mosquitto``) for the tests, on a free loopback port,
with a password file made by ``mosquitto_passwd``; and a small synchronous MQTT
client (paho, which aiomqtt brings) to read what the speakers published and to
publish as Home Assistant would."""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

USER = "huxley"
PASSWORD = "s3cret-broker-pw"

MOSQUITTO = shutil.which("mosquitto") or (
    "/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None
)
PASSWD = shutil.which("mosquitto_passwd")
MISSING = (
    None
    if MOSQUITTO and PASSWD
    else "mosquitto is not installed (Debian package mosquitto; scripts/ensure-system-deps.sh)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """``mosquitto -c`` on ``port``; :meth:`kill` and :meth:`start` again on the same port."""

    def __init__(self, folder: Path) -> None:
        assert MOSQUITTO and PASSWD, MISSING
        self.folder = folder
        self.port = free_port()
        passwords = folder / "passwd"
        subprocess.run([PASSWD, "-c", "-b", str(passwords), USER, PASSWORD], check=True)
        passwords.chmod(0o600)
        self.conf = folder / "mosquitto.conf"
        self.conf.write_text(
            f"listener {self.port} 127.0.0.1\n"
            # as root, mosquitto would become the user "mosquitto", who cannot read tmp
            f"user {getpass.getuser()}\n"
            "allow_anonymous false\n"
            f"password_file {passwords}\n"
            "persistence false\n"
            f"log_dest file {folder / 'mosquitto.log'}\n"
            "log_type error\nlog_type warning\nlog_type notice\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        assert MOSQUITTO is not None
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, "mosquitto exited at start"
                assert time.monotonic() < deadline, "mosquitto did not listen"
                time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Watcher:
    """A paho client on its own loop thread: records every message on ``topics``."""

    def __init__(self, broker: Broker, *topics: str, password: str = PASSWORD) -> None:
        self.messages: list[tuple[str, bytes, bool]] = []
        self._lock = threading.Lock()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.username_pw_set(USER, password)
        self.client.on_message = self._on_message
        self.refused: object = None
        connected = threading.Event()

        def on_connect(
            client: paho.Client, userdata: object, flags: object, rc: object, props: object = None
        ) -> None:
            self.refused = rc if getattr(rc, "is_failure", False) else None
            for topic in topics:
                client.subscribe(topic, qos=1)
            connected.set()

        self.client.on_connect = on_connect
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        assert connected.wait(10), "the watcher did not connect"

    def _on_message(self, client: paho.Client, userdata: object, msg: paho.MQTTMessage) -> None:
        with self._lock:
            self.messages.append((msg.topic, bytes(msg.payload), bool(msg.retain)))

    def seen(self, match: Callable[[str, bytes], bool]) -> list[tuple[str, bytes, bool]]:
        with self._lock:
            return [m for m in self.messages if match(m[0], m[1])]

    def wait_for(
        self, match: Callable[[str, bytes], bool], timeout_s: float = 20.0, *, after: int = 0
    ) -> tuple[str, bytes, bool]:
        """The first message (from index ``after``) that ``match``es; fails past ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                for m in self.messages[after:]:
                    if match(m[0], m[1]):
                        return m
            assert time.monotonic() < deadline, f"not seen; got {[m[0] for m in self.messages]}"
            time.sleep(0.05)

    def count(self) -> int:
        with self._lock:
            return len(self.messages)

    def publish(self, topic: str, payload: bytes | str, *, retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()
