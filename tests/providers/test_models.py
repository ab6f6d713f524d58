"""The model lifecycle table: defaults that exist, shutdowns announced ahead (items 1, 8)."""

from __future__ import annotations

import datetime as dt

import pytest

from huxleyd.providers.cascade.settings import CascadeSettings
from huxleyd.providers.models import MODELS, lifecycle, replacement_for, shutdown_warning
from huxleyd.providers.settings import DIALECTS, ProviderSettings

TODAY = dt.date(2026, 11, 24)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_no_default_realtime_model_is_shut_down_or_due_within_a_year(dialect: str) -> None:
    model = ProviderSettings(kind=dialect).model  # type: ignore[arg-type]
    assert shutdown_warning(model, today=TODAY, within_days=365) is None, model


def test_the_gemini_default_is_not_the_model_shut_down_on_2025_12_09() -> None:
    model = ProviderSettings(kind="gemini").model
    assert model != "gemini-live-2.5-flash-preview"
    entry = lifecycle(model)
    assert entry is not None and entry.shutdown is None


def test_the_shut_down_gemini_model_names_its_replacement() -> None:
    warning = shutdown_warning("models/gemini-live-2.5-flash-preview", today=TODAY, within_days=0)
    assert warning is not None and warning.days_left < 0
    assert warning.replacement == "gemini-2.5-flash-native-audio-preview-12-2025"
    assert "was shut down on 2025-12-09" in warning.message()
    assert replacement_for("gemini-live-2.5-flash-preview") == warning.replacement


def test_announced_end_dates_of_models_we_may_use() -> None:
    # Issue 14 item 8, as the openai package's own model docstrings announce them.
    dates = {e.model: e.shutdown for e in MODELS}
    assert dates["gpt-realtime"] == dt.date(2027, 1, 20)
    assert dates["gpt-4o-mini"] == dt.date(2027, 1, 14)
    assert dates["gpt-4o-mini-transcribe"] == dt.date(2027, 2, 26)
    assert all(e.source for e in MODELS)


def test_a_warning_only_within_the_window() -> None:
    assert shutdown_warning("gpt-realtime", today=TODAY, within_days=30) is None
    near = shutdown_warning("gpt-realtime", today=TODAY, within_days=90)
    assert near is not None and near.days_left == 57
    assert shutdown_warning("no-such-model", today=TODAY, within_days=9999) is None
    with pytest.raises(ValueError, match="within_days"):
        shutdown_warning("gpt-realtime", today=TODAY, within_days=-1)


def test_no_default_model_of_the_cascade_is_due_within_a_year() -> None:
    cascade = CascadeSettings()
    for model in (cascade.llm_model, cascade.asr_model):
        assert lifecycle(model) is not None, model
        assert shutdown_warning(model, today=TODAY, within_days=365) is None, model


def test_doctor_finds_no_announced_shutdown_for_the_defaults() -> None:
    from huxleyd.control.doctor import check_models

    cascade = CascadeSettings()
    fine = check_models(
        [ProviderSettings().model, cascade.llm_model, cascade.asr_model], today=TODAY
    )
    assert fine.status == "ok", fine.detail
