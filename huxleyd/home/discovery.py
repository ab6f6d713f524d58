"""The speaker's MQTT topics and its Home Assistant discovery payloads.

Layer: pure (no I/O). :class:`Topics` names every topic of one speaker
and of the household; :func:`discovery_messages` is what is published
(retained) under ``<discovery_prefix>/<component>/<device id>/<object>/config``
so Home Assistant shows the speaker as one device with its entities.

Unique ids are ``<device id>_<object>``: the device id is made once per
speaker and kept in its state directory (:func:`huxleyd.home.speaker.device_id`),
so renaming the room or the device keeps Home Assistant's entities (and the
automations that use them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

STATES = ("idle", "listening", "thinking", "speaking", "offline", "degraded")
"""What the ``state`` sensor says (an enum sensor in Home Assistant)."""

BUTTON_EVENTS = ("press", "wake")
"""The button entity's event types: the push-to-talk button, the wake word."""


@dataclass(frozen=True, slots=True)
class Topics:
    """Every topic one speaker publishes or listens on."""

    prefix: str
    """``[mqtt] topic_prefix`` (``huxley``)."""
    device: str
    """This speaker's stable id."""
    room: str

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.device}"

    @property
    def availability(self) -> str:
        return f"{self.base}/availability"

    @property
    def state(self) -> str:
        return f"{self.base}/state"

    @property
    def volume(self) -> str:
        return f"{self.base}/volume"

    @property
    def volume_set(self) -> str:
        return f"{self.base}/volume/set"

    @property
    def mute(self) -> str:
        return f"{self.base}/mute"

    @property
    def mute_set(self) -> str:
        return f"{self.base}/mute/set"

    @property
    def problem(self) -> str:
        return f"{self.base}/problem"

    @property
    def button(self) -> str:
        return f"{self.base}/button"

    @property
    def announce(self) -> str:
        """Home Assistant's ``notify.send_message`` text: spoken on this speaker."""
        return f"{self.base}/announce"

    @property
    def heard(self) -> str:
        """What a person said (only with ``publish_heard = true``)."""
        return f"{self.base}/heard"

    # ---- the household

    @property
    def household(self) -> str:
        return f"{self.prefix}/household"

    def room_announce(self, room: str) -> str:
        return f"{self.household}/room/{room}/announce"

    @property
    def all_announce(self) -> str:
        return f"{self.household}/all/announce"

    @property
    def roster(self) -> str:
        """Retained: this speaker's room and name, for the others."""
        return f"{self.household}/speakers/{self.device}"

    @property
    def roster_all(self) -> str:
        return f"{self.household}/speakers/+"

    @property
    def availability_all(self) -> str:
        return f"{self.prefix}/+/availability"

    def receipts(self, device: str) -> str:
        """Where the speakers tell ``device`` what became of its announcements."""
        return f"{self.household}/receipts/{device}"


def device_block(topics: Topics, *, name: str, version: str) -> dict[str, object]:
    return {
        "identifiers": [f"huxley_{topics.device}"],
        "name": name,
        "manufacturer": "Huxley",
        "model": "huxleyd voice speaker",
        "sw_version": version,
        "suggested_area": topics.room.replace("_", " ").title(),
    }


# longer than 50 lines: one table: an entry per Home Assistant entity, read top-down
def discovery_messages(
    topics: Topics,
    *,
    discovery_prefix: str,
    name: str,
    version: str,
    publish_heard: bool = False,
) -> dict[str, str]:
    """Discovery topic → JSON payload, for every entity of the speaker.

    With ``publish_heard`` off, the ``heard`` sensor's config topic maps to an
    empty payload: publishing it (retained) removes an entity an earlier
    configuration had made."""
    device = device_block(topics, name=name, version=version)
    common = {
        "availability_topic": topics.availability,
        "device": device,
    }

    def entity(component: str, obj: str, **fields: object) -> tuple[str, str]:
        config: dict[str, object] = {
            "unique_id": f"huxley_{topics.device}_{obj}",
            "object_id": obj,
            **common,
        }
        config.update(fields)
        topic = f"{discovery_prefix}/{component}/huxley_{topics.device}/{obj}/config"
        return topic, json.dumps(config, sort_keys=True)

    messages = dict(
        [
            entity(
                "sensor",
                "state",
                name="State",
                state_topic=topics.state,
                device_class="enum",
                options=list(STATES),
                icon="mdi:account-voice",
            ),
            entity(
                "number",
                "volume",
                name="Volume",
                state_topic=topics.volume,
                command_topic=topics.volume_set,
                min=0,
                max=100,
                step=1,
                mode="slider",
                icon="mdi:volume-high",
            ),
            entity(
                "switch",
                "mute",
                name="Microphone mute",
                state_topic=topics.mute,
                command_topic=topics.mute_set,
                payload_on="ON",
                payload_off="OFF",
                icon="mdi:microphone-off",
            ),
            entity(
                "sensor",
                "problem",
                name="Last problem",
                state_topic=topics.problem,
                entity_category="diagnostic",
                icon="mdi:alert-circle-outline",
            ),
            entity(
                "event",
                "button",
                name="Button",
                state_topic=topics.button,
                event_types=list(BUTTON_EVENTS),
                icon="mdi:gesture-tap-button",
            ),
            entity(
                "notify",
                "announce",
                name="Announce",
                command_topic=topics.announce,
                icon="mdi:bullhorn",
            ),
        ]
    )
    heard_topic, heard_config = entity(
        "sensor", "heard", name="Last heard", state_topic=topics.heard, icon="mdi:ear-hearing"
    )
    messages[heard_topic] = heard_config if publish_heard else ""
    return messages
