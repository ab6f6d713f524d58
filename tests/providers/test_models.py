"""The model lifecycle table: defaults that exist, shutdowns announced ahead (items 1, 8)."""

from __future__ import annotations

import datetime as dt
import logging
import typing
from pathlib import Path

import pytest
from openai.types.realtime import realtime_session_create_request_param as session_param

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
    # Google names the 12-2025 preview, whose model pages name their successors in turn.
    assert warning.replacement == "gemini-3.8-live"
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
    from huxleyd.control.doctor_provider import check_models

    cascade = CascadeSettings()
    fine = check_models(
        [ProviderSettings().model, cascade.llm_model, cascade.asr_model], today=TODAY
    )
    assert fine.status == "ok", fine.detail


# ---------------------------------------------------------------- issue 25 item 2: successors


def openai_realtime_models() -> set[str]:
    """The model names the ``openai`` package's realtime session type lists."""
    hints = typing.get_type_hints(
        session_param.RealtimeSessionCreateRequestParam,
        globalns={**vars(session_param), "ClassVar": typing.ClassVar},
    )
    names: set[str] = set()
    for arm in typing.get_args(hints["model"]):
        names.update(a for a in typing.get_args(arm) if isinstance(a, str))
    return names


def test_each_shutdown_of_the_providers_we_cite_names_what_to_use_instead() -> None:
    instead = {e.model: replacement_for(e.model) for e in MODELS if e.shutdown is not None}
    assert instead["gpt-realtime"] == "gpt-realtime-2.1"
    assert instead["gpt-realtime-mini"] == "gpt-realtime-2.1-mini"
    assert instead["gpt-4o-mini"] == "gpt-6-luna"
    assert instead["whisper-1"] == "gpt-transcribe"
    assert all(instead.values()), [m for m, r in instead.items() if not r]


def test_every_named_successor_is_in_the_table_and_not_itself_going_away() -> None:
    for entry in MODELS:
        if entry.replacement is None:
            continue
        successor = lifecycle(entry.replacement)
        assert successor is not None, f"{entry.model} -> {entry.replacement}: not in the table"
        assert successor.provider == entry.provider
        newest = replacement_for(entry.model)
        assert newest is not None
        assert shutdown_warning(newest, today=TODAY, within_days=365) is None, newest


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_default_is_the_newest_its_provider_names(dialect: str) -> None:
    model = ProviderSettings(kind=dialect).model  # type: ignore[arg-type]
    assert replacement_for(model) is None, f"{model} has a named successor"


def test_the_superseded_defaults_point_at_the_current_ones() -> None:
    assert replacement_for("grok-voice-think-fast-1.0") == "grok-voice-think-fast-2.0"
    assert replacement_for("gemini-2.5-flash-native-audio-preview-12-2025") == "gemini-3.8-live"
    assert replacement_for("gemini-3.1-flash-live-preview") == "gemini-3.8-live"


def test_the_openai_realtime_rows_are_models_the_openai_package_knows() -> None:
    known = openai_realtime_models()
    rows = {e.model for e in MODELS if e.provider == "openai" and "realtime" in e.model}
    assert "gpt-realtime-2.1" in known
    assert rows <= known, rows - known


# ---------------------------------------------------------------- issue 40: kept current


def sdk_deprecated_realtime_models() -> dict[str, dt.date]:
    """What the installed ``openai`` package's realtime model docstring lists as
    deprecated, with the announced shutdown date it gives them."""
    import inspect
    import re

    source = inspect.getsource(session_param)
    block = source.split("Deprecated values:", 1)[1].split('"""', 1)[0]
    found: dict[str, dt.date] = {}
    for names, when in re.findall(
        r"- (.+?):\s+Announced shutdown date: (\d{4}-\d\d-\d\d)", block, re.S
    ):
        for name in re.findall(r'"([\w.-]+)"', names):
            found[name] = dt.date.fromisoformat(when)
    return found


def test_every_realtime_model_the_sdk_deprecates_has_its_row_and_date() -> None:
    deprecated = sdk_deprecated_realtime_models()
    assert "gpt-realtime-mini-2025-12-15" in deprecated  # the SDK still says so
    realtime = {m for m in deprecated if "realtime" in m}
    for model in sorted(realtime):
        entry = lifecycle(model)
        assert entry is not None, f"{model} has no row"
        assert entry.shutdown == deprecated[model], model
        assert entry.replacement is not None, model


def test_the_new_rows_and_where_they_lead() -> None:
    mini = shutdown_warning(
        "gpt-realtime-mini-2025-12-15", today=dt.date(2026, 12, 3), within_days=60
    )
    assert mini is not None and mini.days_left == 48
    assert mini.replacement == "gpt-realtime-2.1-mini"
    assert replacement_for("grok-voice-fast-1.0") == "grok-voice-think-fast-2.0"
    voice3 = lifecycle("grok-voice-3.0")
    assert voice3 is not None and voice3.shutdown is None
    assert ProviderSettings(kind="xai").model == "grok-voice-think-fast-2.0"


def test_the_warning_window_is_sixty_days_everywhere() -> None:
    import inspect

    from huxleyd.control.doctor_provider import check_models
    from huxleyd.providers.models import SHUTDOWN_WARN_DAYS, shutdown_warnings

    assert SHUTDOWN_WARN_DAYS == 60
    doctor_days = inspect.signature(check_models).parameters["warn_days"].default
    assert doctor_days == SHUTDOWN_WARN_DAYS
    shutdown = dt.date(2027, 1, 20)
    on = shutdown - dt.timedelta(days=60)
    assert [w.model for w in shutdown_warnings(["gpt-realtime-mini-2025-12-15"], today=on)] == [
        "gpt-realtime-mini-2025-12-15"
    ]
    assert (
        shutdown_warnings(["gpt-realtime-mini-2025-12-15"], today=on - dt.timedelta(days=1)) == []
    )
    near = check_models(["gpt-realtime-mini-2025-12-15"], today=on)
    assert near.status != "ok" and "gpt-realtime-2.1-mini" in (near.detail + (near.fix or ""))


def test_check_config_and_the_start_warn_and_name_the_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from huxleyd.app.main import main
    from huxleyd.app.model_notice import log_model_shutdowns
    from huxleyd.config.load import load_config
    from tests.config.test_check_config import write

    path = write(tmp_path, provider='model = "gpt-realtime-mini-2025-12-15"')
    with caplog.at_level(logging.WARNING):
        log_model_shutdowns(load_config(path), today=dt.date(2026, 12, 3))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("provider_model_shutdown_near"), lines
    assert "replacement=gpt-realtime-2.1-mini" in lines[0] and "days_left=48" in lines[0]
    caplog.clear()
    (tmp_path / "default").mkdir()
    log_model_shutdowns(load_config(write(tmp_path / "default")), today=dt.date(2026, 12, 3))
    assert not caplog.records  # the default model: nothing to say
    assert main(["--check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(")") and ": runs (" in out[0]
    # Today is past the 60-day mark (2026-11-21) for this model, before or after its date.
    assert len(out) == 2 and "warning: model 'gpt-realtime-mini-2025-12-15'" in out[1], out
    assert "'gpt-realtime-2.1-mini'" in out[1]
