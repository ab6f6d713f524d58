"""What Gemini sends and the device does not use is said once per connection, not dropped.

A text part in ``modelTurn``, ``groundingMetadata`` and
``interimInputTranscription`` (fields of google-genai's ``LiveServerContent``)
used to vanish without a word.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from huxleyd.logs import FIELDS_ATTR
from tests.providers.gemini_frames import content, ready_core, server

TEXT_PART = {"modelTurn": {"role": "model", "parts": [{"text": "written, not spoken"}]}}
GROUNDING = {"groundingMetadata": {"webSearchQueries": ["weather madrid"]}}
INTERIM = {"interimInputTranscription": {"text": "what is the"}}


def unused(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [
        getattr(r, FIELDS_ATTR, {}).get("field")
        for r in caplog.records
        if "provider_content_unused" in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (TEXT_PART, "serverContent.modelTurn.parts.text"),
        (GROUNDING, "serverContent.groundingMetadata"),
        (INTERIM, "serverContent.interimInputTranscription"),
    ],
)
def test_each_unused_field_is_logged_once_per_connection(
    fields: dict[str, Any], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="huxleyd.providers.gemini")
    core = ready_core()
    for _ in range(3):
        core.receive(content(**fields))
    assert unused(caplog) == [named]
    assert core.protocol_errors == 0
    core.connection_lost()
    core.connection_opened()  # a new connection (a resumption): said again, once
    core.receive(server({"setupComplete": {}}))
    core.receive(content(**fields))
    core.receive(content(**fields))
    assert unused(caplog) == [named, named]
