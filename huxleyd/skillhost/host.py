"""Skills loaded for a persona, their lifecycle, and calling their tools safely.

The persona names skills; each is resolved (:mod:`huxleyd.skillhost.loading`) in the ``huxley.skills``
entry-point group (:mod:`huxleyd.skillhost.sources` picks the distribution when
two provide one name), instantiated, checked against the Skill protocol,
its config checked against its ``config_schema``, and set up with its own
:class:`~huxley_sdk.SkillContext`. Everything that can be wrong fails at
start, one line each (conventions rule 11, docs/conventions.md).

Lifecycle, as Huxley's SDK documents it: ``name``, ``tools`` and ``handle``
are required; ``setup``, ``reconfigure``, ``teardown`` and
``prompt_context`` are optional. :meth:`SkillHost.prompt_context` joins
every skill's contribution for the session instructions;
:meth:`SkillHost.reconfigure` hands changed persona config to the skills.

:meth:`SkillHost.call` is the only way tools run: it parses and checks the
arguments against the tool's schema, runs ``handle`` within the tool's
budget (the skill's ``tool_timeouts_s[tool]``, a huxleyd extension, else
the host's), and always returns a
:class:`ToolOutcome` whose ``output`` can be sent to the model — also when
the skill raised, hung, or the arguments were wrong. A call past its budget
(or cancelled) is *abandoned*, not awaited: it is cancelled and left to end
on its own, so a skill that swallows ``CancelledError`` cannot hold a turn
or a shutdown; :attr:`SkillHost.abandoned` counts those still running.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from huxley_sdk import Skill, SkillContext, ToolDefinition, ToolResult
from huxley_sdk.types import SideEffect
from huxleyd.errors import (
    ConfigError,
    SkillCollisionError,
)
from huxleyd.logs import get_logger
from huxleyd.skillhost.argcheck import check_arguments
from huxleyd.skillhost.loading import check_config, load_source
from huxleyd.skillhost.sources import (
    Installed,
    pick_source,
    skill_config,
    skill_sources,
    storage_namespace,
)

log = get_logger("huxleyd.skills")

ContextFactory = Callable[[str, dict[str, Any]], SkillContext]
"""``(skill_name, skill_config) -> SkillContext``, supplied by the daemon."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one tool call, always sendable to the model."""

    call_id: str
    tool: str
    output: str
    side_effect: SideEffect | None = None
    error: str | None = None
    """``None`` on success; else ``invalid_arguments``, ``tool_failed``, ``timeout``, ``unknown_tool``, ``cancelled``."""

    @property
    def ok(self) -> bool:
        return self.error is None


def error_output(error: str, **details: Any) -> str:
    return json.dumps({"error": error, **details})


CANCELLED_OUTPUT = json.dumps({"cancelled": True})


SETUP_BUDGET_S = 30.0
"""How long one skill's ``setup`` may take before it is left out (and retried)."""


class SkillHost:
    """The loaded skills of a persona, their lifecycle, and the tool dispatcher."""

    def __init__(
        self,
        skills: Iterable[Skill],
        *,
        descriptions: Mapping[str, str] | None = None,
        tool_timeout_s: float = 8.0,
        sources: Mapping[str, str] | None = None,
        language: str | None = None,
    ) -> None:
        self.skills: list[Skill] = list(skills)
        self.language = language
        """Selects each skill table's ``i18n.<language>`` overrides."""
        self._by_tool: dict[str, tuple[Skill, ToolDefinition]] = {}
        self._descriptions = dict(descriptions or {})
        self.tool_timeout_s = tool_timeout_s
        self.sources: dict[str, str] = dict(sources or {})
        """Skill name → the distribution it was loaded from."""
        self.namespaces: dict[str, str] = {}
        """Skill name → its storage namespace, when not its name (see storage_namespace)."""
        self._configs: dict[str, dict[str, Any]] = {}
        self._context_failed: set[str] = set()
        self._abandoned: set[asyncio.Task[object]] = set()
        self.failed: dict[str, str] = {}
        """Skills left out (persona order): name → why, one line. They offer no tools."""
        self._retryable: dict[str, Skill] = {}
        """Failed skills whose ``setup`` may succeed later (the network was not up)."""
        self.order: list[str] = [s.name for s in self.skills]
        """Every skill the persona names, loaded or failed, in persona order."""
        self._attached: dict[str, Skill] = {}
        """Tool sources that are not persona skills (an MCP server, the household):
        their tools go through the same :meth:`call` (see :meth:`attach`)."""
        self._index_tools()
        self.on_outcome: Callable[[ToolOutcome], None] | None = None
        """Told of every finished call (the runtime publishes it to ``huxleyctl watch``)."""
        unknown = sorted(set(self._descriptions) - set(self._by_tool))
        if unknown:
            raise SkillCollisionError(
                f"persona overrides descriptions of unknown tools: {', '.join(unknown)} "
                f"(loaded tools: {', '.join(sorted(self._by_tool))})"
            )

    def _index_tools(self) -> None:
        by_tool: dict[str, tuple[Skill, ToolDefinition]] = {}
        for skill in self.skills:
            for tool in skill.tools:
                if tool.name in by_tool:
                    other = by_tool[tool.name][0].name
                    raise SkillCollisionError(
                        f"tool {tool.name!r} is defined by both skill {other!r} and {skill.name!r}"
                    )
                by_tool[tool.name] = (skill, tool)
        for source in self._attached.values():
            for tool in source.tools:
                if tool.name in by_tool:  # a skill's tool wins; the source's is left out
                    log.warning(
                        "tool_left_out",
                        tool=tool.name,
                        source=source.name,
                        reason=f"skill {by_tool[tool.name][0].name!r} defines it",
                    )
                    continue
                by_tool[tool.name] = (source, tool)
        self._by_tool = by_tool

    def attach(self, source: Skill) -> None:
        """Offer ``source``'s tools beside the skills' (or refresh them when they changed).

        A source has a skill's ``name``, ``tools`` and ``handle`` (and may have
        ``tool_timeouts_s``); it is not a persona skill (no setup, no storage,
        not in ``huxleyctl skills``). Its calls go through :meth:`call`: the
        same deadline, the same generic error to the model and detail to the
        journal. A tool whose name a skill already uses is left out, logged."""
        self._attached[source.name] = source
        self._index_tools()

    def detach(self, name: str) -> None:
        """Stop offering the tools of the attached source ``name``."""
        if self._attached.pop(name, None) is not None:
            self._index_tools()

    @classmethod
    def load(
        cls,
        names: Iterable[str],
        *,
        installed: Installed | None = None,
        configs: Mapping[str, Mapping[str, Any]] | None = None,
        persona_file: str = "persona",
        descriptions: Mapping[str, str] | None = None,
        tool_timeout_s: float = 8.0,
        language: str | None = None,
    ) -> SkillHost:
        """Resolve, instantiate and check the named skills. Raises a one-line error.

        ``configs`` are the persona's ``[skills.NAME]`` tables: their
        ``from`` picks a distribution, the rest is checked against the
        skill's ``config_schema``.
        """
        available: Installed = skill_sources() if installed is None else installed
        configs = configs or {}
        skills: list[Skill] = []
        sources: dict[str, str] = {}
        namespaces: dict[str, str] = {}
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise SkillCollisionError(f"skill {name!r} is listed twice")
            seen.add(name)
            raw = configs.get(name, {})
            source = pick_source(name, available, raw, persona_file=persona_file)
            skill = load_source(source)
            check_config(skill, skill_config(raw, language), persona_file=persona_file)
            skills.append(skill)
            sources[name] = source.distribution
            namespaces[name] = storage_namespace(source, available)
        host = cls(
            skills,
            descriptions=descriptions,
            tool_timeout_s=tool_timeout_s,
            sources=sources,
            language=language,
        )
        host.namespaces = {n: ns for n, ns in namespaces.items() if ns != n}
        return host

    def storage_namespace(self, name: str) -> str:
        """The namespace of skill ``name``'s ``ctx.storage``."""
        return self.namespaces.get(name, name)

    def leave_out(self, name: str, reason: str) -> None:
        """Record that ``name`` failed to load (import, shape, its persona table)."""
        if name not in self.order:
            self.order.append(name)
        self.failed[name] = reason
        log.error("skill_left_out", skill=name, reason=reason, effect="its tools are not offered")

    def take_out(self, name: str, reason: str) -> bool:
        """A running skill stops working (its host process died): left out, retryable.

        False when ``name`` is not running (already left out). The caller says
        so and retries its setup (:meth:`retry_setup`) with backoff."""
        skill = next((s for s in self.skills if s.name == name), None)
        if skill is None:
            return False
        self.skills.remove(skill)
        self._retryable[name] = skill
        self.leave_out(name, reason)
        self._index_tools()
        return True

    async def setup_all(
        self,
        make_context: ContextFactory,
        configs: Mapping[str, Mapping[str, Any]],
        *,
        budget_s: float = SETUP_BUDGET_S,
    ) -> None:
        """Run every skill's ``setup`` (when it has one), each within ``budget_s``.

        A skill whose setup raises or overruns is left out (:attr:`failed`,
        ``skill_left_out``): its tools are not offered; :meth:`retry_setup`
        tries it again. The other skills run."""
        for skill in list(self.skills):
            config = skill_config(configs.get(skill.name, {}), self.language)
            self._configs[skill.name] = dict(config)
            reason = await self._setup(skill, make_context, budget_s)
            if reason is not None:
                self.skills.remove(skill)
                self._retryable[skill.name] = skill
                self.leave_out(skill.name, reason)
        self._index_tools()

    async def _setup(
        self, skill: Skill, make_context: ContextFactory, budget_s: float
    ) -> str | None:
        """Run ``skill.setup``; None when it worked, else why not (one line)."""
        setup = getattr(skill, "setup", None)
        try:
            if setup is not None:
                context = make_context(skill.name, dict(self._configs.get(skill.name, {})))
                await self._run_within(setup(context), budget_s, f"{skill.name}.setup")
        except TimeoutError:
            return f"setup did not finish within {budget_s:g} s"
        except Exception as exc:
            # The skill's own message is for the admin; its class name is not.
            return "setup failed: " + (" ".join(str(exc).split()) or type(exc).__name__)
        log.info(
            "skill_ready",
            skill=skill.name,
            distribution=self.sources.get(skill.name, "?"),
            tools=",".join(t.name for t in skill.tools),
        )
        return None

    @property
    def every_skill(self) -> list[Skill]:
        """The loaded skills and those left out that may come back (their code runs)."""
        return [*self.skills, *self._retryable.values()]

    @property
    def retryable(self) -> list[str]:
        """Failed skills :meth:`retry_setup` can try again."""
        return list(self._retryable)

    async def retry_setup(
        self, name: str, make_context: ContextFactory, *, budget_s: float = SETUP_BUDGET_S
    ) -> bool:
        """Try a failed skill's ``setup`` again; True once it runs (its tools are offered)."""
        skill = self._retryable.get(name)
        if skill is None:
            return name not in self.failed
        reason = await self._setup(skill, make_context, budget_s)
        if reason is not None:
            self.failed[name] = reason
            return False
        del self._retryable[name]
        del self.failed[name]
        rank = {n: i for i, n in enumerate(self.order)}
        self.skills = sorted([*self.skills, skill], key=lambda s: rank.get(s.name, len(rank)))
        self._index_tools()
        return True

    def changed_configs(
        self, configs: Mapping[str, Mapping[str, Any]], *, force: bool = False
    ) -> list[str]:
        """Loaded skills whose persona config differs from what they last got."""
        return [
            s.name
            for s in self.skills
            if force
            or skill_config(configs.get(s.name, {}), self.language) != self._configs.get(s.name, {})
        ]

    async def reconfigure(
        self,
        make_context: ContextFactory,
        configs: Mapping[str, Mapping[str, Any]],
        names: Iterable[str],
        *,
        persona_file: str = "persona",
    ) -> list[str]:
        """Call ``reconfigure(ctx)`` on the named skills with their new config.

        A config its schema rejects is not handed over (the skill keeps the
        old one; ConfigError is raised after the others ran). A skill whose
        ``reconfigure`` raises is logged and keeps running. Returns the names
        of the skills that were reconfigured.
        """
        wanted = set(names)
        done: list[str] = []
        rejected: ConfigError | None = None
        for skill in self.skills:
            if skill.name not in wanted:
                continue
            config = skill_config(configs.get(skill.name, {}), self.language)
            try:
                check_config(skill, config, persona_file=persona_file)
            except ConfigError as exc:
                log.error("skill_config_rejected", skill=skill.name, error=str(exc))
                rejected = rejected or exc
                continue
            self._configs[skill.name] = dict(config)
            hook = getattr(skill, "reconfigure", None)
            if hook is not None:
                try:
                    await hook(make_context(skill.name, dict(config)))
                except Exception:
                    log.exception("skill_reconfigure_failed", skill=skill.name)
                    continue
            done.append(skill.name)
            log.info("skill_reconfigured", skill=skill.name)
        self._index_tools()
        if rejected is not None:
            raise rejected
        return done

    def prompt_context(self) -> str:
        """Every skill's ``prompt_context()`` that is not empty, in persona order.

        A skill whose ``prompt_context`` raises or returns a non-string is
        skipped with one log line (per skill, not per call: this runs before
        every turn).
        """
        parts: list[str] = []
        for skill in self.skills:
            getter = getattr(skill, "prompt_context", None)
            if getter is None:
                continue
            try:
                text: object = getter()
            except Exception:
                if skill.name not in self._context_failed:
                    self._context_failed.add(skill.name)
                    log.exception("skill_prompt_context_failed", skill=skill.name)
                continue
            if not isinstance(text, str):
                if skill.name not in self._context_failed:
                    self._context_failed.add(skill.name)
                    log.error("skill_prompt_context_not_text", skill=skill.name)
                continue
            if text.strip():
                parts.append(text.strip())
        return "\n\n".join(parts)

    async def teardown_all(self) -> None:
        """Tear down in reverse order; a failing teardown is logged, not raised."""
        for skill in reversed(self.skills):
            teardown = getattr(skill, "teardown", None)
            if teardown is None:
                continue
            try:
                await self._run_within(teardown(), 5.0, f"{skill.name}.teardown")
            except TimeoutError:
                log.error("skill_teardown_timeout", skill=skill.name, timeout_s=5.0)
            except Exception:
                log.exception("skill_teardown_failed", skill=skill.name)

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools for the model, descriptions in the persona's language."""
        return [
            replace(tool, description=self._descriptions.get(name, tool.description))
            for name, (_skill, tool) in self._by_tool.items()
        ]

    def skill_of(self, tool: str) -> str | None:
        entry = self._by_tool.get(tool)
        return entry[0].name if entry else None

    async def call(self, call_id: str, tool: str, arguments_json: str) -> ToolOutcome:
        """Run one tool call. Never raises (except CancelledError); always an output.

        :attr:`on_outcome` (``huxleyctl watch``) hears of every outcome."""
        outcome = await self._call(call_id, tool, arguments_json)
        if self.on_outcome is not None:
            try:
                self.on_outcome(outcome)
            except Exception:
                log.exception("tool_observer_failed", tool=tool)
        return outcome

    async def _call(self, call_id: str, tool: str, arguments_json: str) -> ToolOutcome:
        entry = self._by_tool.get(tool)
        if entry is None:
            return ToolOutcome(
                call_id, tool, error_output("unknown_tool", tool=tool), error="unknown_tool"
            )
        skill, definition = entry
        try:
            args = json.loads(arguments_json or "{}")
        except ValueError as exc:
            msg = error_output("invalid_arguments", problems=[f"not JSON: {exc}"])
            return ToolOutcome(call_id, tool, msg, error="invalid_arguments")
        problems = check_arguments(args, definition.parameters)
        if problems:
            log.warning(
                "tool_invalid_arguments", tool=tool, skill=skill.name, problems="; ".join(problems)
            )
            msg = error_output("invalid_arguments", problems=problems)
            return ToolOutcome(call_id, tool, msg, error="invalid_arguments")
        budget_s = self.budget_s(skill, tool)
        try:
            # typed as ToolResult, but a skill is third-party code: check it.
            result: object = await self._run_within(skill.handle(tool, args), budget_s, tool)
        except TimeoutError:
            log.error("tool_timeout", tool=tool, skill=skill.name, timeout_s=budget_s)
            msg = error_output("timeout", message=f"{tool} did not answer within {budget_s:g} s")
            return ToolOutcome(call_id, tool, msg, error="timeout")
        except Exception as exc:
            # The message and the arguments may hold what the user said or a
            # secret the skill read; they go to the journal, never to the cloud
            # model, which gets the exception's class only.
            log.exception(
                "tool_failed",
                tool=tool,
                skill=skill.name,
                exception=type(exc).__name__,
                message=" ".join(str(exc).split()),
                arguments=arguments_json,
            )
            msg = error_output("tool_failed", exception=type(exc).__name__)
            return ToolOutcome(call_id, tool, msg, error="tool_failed")
        if not isinstance(result, ToolResult):
            log.error("tool_bad_result", tool=tool, skill=skill.name, got=type(result).__name__)
            msg = error_output("tool_failed", message="the skill returned no ToolResult")
            return ToolOutcome(call_id, tool, msg, error="tool_failed")
        return ToolOutcome(call_id, tool, result.output, result.side_effect)

    def budget_s(self, skill: Skill, tool: str) -> float:
        """How long ``tool`` may take: the skill's own declaration, else the host's.

        A huxleyd extension outside the SDK (which stays at parity with
        Huxley's): a skill may have ``tool_timeouts_s``, a mapping of tool name
        to seconds, read at every call (it may follow the skill's config).
        """
        declared = getattr(skill, "tool_timeouts_s", None)
        if isinstance(declared, Mapping):
            value = declared.get(tool)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return float(value)
        return self.tool_timeout_s

    @property
    def abandoned(self) -> int:
        """Tool calls given up (timed out or cancelled) whose skill code still runs."""
        return len(self._abandoned)

    async def _run_within(self, coro: Any, budget_s: float, tool: str) -> object:
        """``await coro`` for at most ``budget_s``; TimeoutError past it.

        Unlike ``asyncio.wait_for``, never waits for the cancelled call to end:
        past the budget, or when the caller is cancelled, the call is cancelled
        and abandoned (kept referenced until it ends, then its end is logged).
        """
        task: asyncio.Task[object] = asyncio.get_running_loop().create_task(
            coro, name=f"skill-{tool}"
        )
        try:
            done, _ = await asyncio.wait({task}, timeout=budget_s)
        except asyncio.CancelledError:
            self._abandon(task, tool, "cancelled")
            raise
        if not done:
            self._abandon(task, tool, "timeout")
            raise TimeoutError
        return task.result()

    def _abandon(self, task: asyncio.Task[object], tool: str, why: str) -> None:
        task.cancel()
        if task.done():
            return
        self._abandoned.add(task)

        def ended(finished: asyncio.Task[object]) -> None:
            self._abandoned.discard(finished)
            if not finished.cancelled():  # it swallowed the cancellation and ran on
                log.warning("tool_ignored_cancel", tool=tool, why=why)

        task.add_done_callback(ended)
