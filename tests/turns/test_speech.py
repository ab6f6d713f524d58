"""SpeechOutput: chunks to the speech source in order, cut on demand, bounded,
and the first sample *heard* (not handed over) reported."""

from __future__ import annotations

import asyncio

from huxleyd.turns.speech import BYTES_PER_MS, HeardUpTo, SpeechOutput
from tests.fakes.turn_ports import HeldSpeechAudio, RecordingAudio
from tests.turns import settle

CHUNK = bytes(100 * BYTES_PER_MS)  # 100 ms


def pending(speech: SpeechOutput) -> bool:
    """Read fresh (mypy keeps an earlier assert's narrowing of the property)."""
    return speech.pending


async def test_chunks_reach_the_speech_source_in_order_with_their_items() -> None:
    audio = RecordingAudio()
    speech = SpeechOutput(audio)
    speech.start()
    speech.enqueue("i1", CHUNK)
    speech.enqueue("i1", CHUNK[:480])
    speech.enqueue("i2", CHUNK)
    assert pending(speech)
    await settle()
    assert audio.sources["speech"].writes == [("i1", len(CHUNK)), ("i1", 480), ("i2", len(CHUNK))]
    assert not pending(speech) and speech.current_item_id == "i2"
    await speech.close()


async def test_played_out_waits_for_the_speaker_to_drain() -> None:
    audio = RecordingAudio()
    audio.speech_drained.clear()
    speech = SpeechOutput(audio)
    speech.start()
    speech.enqueue("i1", CHUNK)
    waiter = asyncio.ensure_future(speech.played_out())
    await settle()
    assert not waiter.done()  # written, not yet heard
    audio.speech_drained.set()
    await settle()
    assert waiter.done()
    await speech.close()


async def test_the_first_heard_callback_waits_for_the_played_position() -> None:
    audio = HeldSpeechAudio()
    source = audio.speech
    source.position = 2400  # 100 ms of earlier speech on this source's timeline
    heard: list[str] = []
    speech = SpeechOutput(audio)
    speech.start()
    speech.arm_first_heard(lambda: heard.append("heard"))
    speech.enqueue("i1", CHUNK)
    speech.enqueue("i1", CHUNK)
    await settle()
    assert len(source.writes) == 2  # handed to the ring ...
    assert heard == []  # ... but nothing of it played yet
    await source.play_to(2400)  # the earlier speech, not this chunk
    await settle()
    assert heard == []
    await source.play_to(2401)  # the chunk's first sample
    await settle()
    assert heard == ["heard"]
    await source.play_to(20_000)
    await settle()
    assert heard == ["heard"]  # once
    await speech.close()


async def first_chunk_written() -> tuple[HeldSpeechAudio, SpeechOutput, list[str]]:
    """A speech output whose first chunk is in the ring, its first-heard callback armed."""
    audio = HeldSpeechAudio()
    heard: list[str] = []
    speech = SpeechOutput(audio)
    speech.start()
    speech.arm_first_heard(lambda: heard.append("heard"))
    speech.enqueue("i1", CHUNK)
    await settle()
    return audio, speech, heard


async def test_a_cut_means_the_first_sample_is_never_reported_heard() -> None:
    audio, speech, heard = await first_chunk_written()
    speech.cut()
    await audio.speech.play_to(10_000)  # a flush moves the played position: not playout
    await settle()
    assert heard == []
    await speech.close()


async def test_an_engine_closed_before_playout_is_not_an_error() -> None:
    audio, speech, heard = await first_chunk_written()
    await audio.speech.close()
    await settle()
    assert heard == []
    await speech.close()


async def test_cut_empties_the_queue_flushes_and_says_what_was_heard() -> None:
    audio = HeldSpeechAudio()
    audio.speech.hold()  # the ring is full: the writer waits
    speech = SpeechOutput(audio)
    speech.start()
    for _ in range(5):
        speech.enqueue("i1", CHUNK)
    await settle()
    audio.played["i1"] = 240
    heard = speech.cut()
    assert heard == HeardUpTo("i1", 240)
    assert ("flush", "speech") in audio.log
    assert not pending(speech) and speech.queued_ms == 0
    audio.speech.release()
    await settle()
    assert audio.speech.writes == []  # nothing queued before the cut is written after it
    speech.enqueue("i2", CHUNK)  # a new writer took over
    await settle()
    assert audio.speech.writes == [("i2", len(CHUNK))]
    await speech.close()


async def test_after_forget_item_a_cut_has_nothing_to_truncate() -> None:
    audio = RecordingAudio()
    speech = SpeechOutput(audio)
    speech.start()
    speech.enqueue("i1", CHUNK)
    await settle()
    speech.forget_item()
    assert speech.cut() is None
    await speech.close()


async def test_the_queue_is_bounded_and_an_overflowing_item_is_dropped_whole() -> None:
    audio = HeldSpeechAudio()
    audio.speech.hold()  # the ring is full: nothing leaves the queue
    speech = SpeechOutput(audio, max_queued_ms=1000)
    speech.start()
    assert speech.enqueue("i1", CHUNK)
    await settle()  # the writer took it and waits on the ring
    accepted = [speech.enqueue("i1", CHUNK) for _ in range(11)]
    assert accepted == [True] * 10 + [False]  # ten fill the queue's 1000 ms
    assert speech.queued_ms == 1000
    assert speech.dropped_chunks == 1
    audio.speech.release()
    await settle()
    # The rest of the overflowing item is dropped too (no holes in the speech) ...
    assert not speech.enqueue("i1", CHUNK)
    assert speech.dropped_chunks == 2
    # ... and the next item is queued again.
    assert speech.enqueue("i2", CHUNK)
    await settle()
    assert [w for w in audio.speech.writes if w[0] == "i2"] == [("i2", len(CHUNK))]
    assert len(audio.speech.writes) == 12
    await speech.close()


async def test_a_cut_lets_the_overflowing_item_id_in_again() -> None:
    audio = HeldSpeechAudio()
    audio.speech.hold()
    speech = SpeechOutput(audio, max_queued_ms=100)
    speech.start()
    speech.enqueue("i1", CHUNK)
    await settle()
    speech.enqueue("i1", CHUNK)
    assert not speech.enqueue("i1", CHUNK)
    speech.cut()
    audio.speech.release()
    assert speech.enqueue("i1", CHUNK)
    await speech.close()
