"""One rollout inside a sandbox (docs/CONTRACTS.md): services → healthcheck → harness →
agent_done → tests → verifier → artifacts → report. Returns a :class:`RunnerReport`; never raises for task, harness,
service or verifier failures (they become outcomes), and always stops what it started.

Timings (seconds): ``services`` (start + health), ``agent``, ``wait_tests``, ``verifier``,
``total``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from environments.domain_registry import UnknownServices, domain_for, skill_files
from environments.harnesses import (
    OUTCOME_FILE,
    SERVICES_URL_ENV,
    HarnessConfigError,
    HarnessContext,
    HarnessMissing,
    UnknownHarness,
    get_harness,
)
from environments.harnesses.base import deliver_final_reply, load_tools_file, package_root
from environments.procs import run_process, tail
from environments.records import ErrorKind, Outcome, RunnerReport
from environments.runner.artifacts import collect_task_artifacts, hand_over_artifacts
from environments.runner.classify import classify_exit
from environments.runner.finish import engine_clock, post_agent_done
from environments.runner.healthcheck import HealthcheckError, wait_healthy
from environments.runner.jail import Jail, JailError, choose_jail, chown_tree
from environments.runner.options import RunnerOptions
from environments.runner.users import SandboxUser, UserError, resolve_user
from environments.runner.verifier import run_verifier, wait_for_tests
from environments.service_group import ServiceError, ServiceGroup
from environments.service_host import AppFactory
from environments.taskdir import envvars
from environments.taskdir.model import TaskConfig, normalize_raw
from environments.verifiers.reward_files import VerifierError

log = logging.getLogger(__name__)

PHASE_PREFIX = "OPENFORGE_PHASE "
#: The most ``--wait-for`` waits (a safety net: the backend kills the sandbox when the
#: compose sidecars fail, and it may build them first).
WAIT_FOR_TIMEOUT_S = 3600.0


class _Stop(Exception):
    """Ends the rollout early with the given outcome."""

    def __init__(self, status: Outcome, kind: ErrorKind | str, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.kind = kind.value if isinstance(kind, ErrorKind) else kind
        self.error = error


def read_task_config(task_dir: Path) -> TaskConfig:
    """task.toml of a sandbox's ``task/`` (which has no tests/ or solution/ to validate)."""
    path = task_dir / "task.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        return TaskConfig.model_validate(normalize_raw(raw, task_dir.name))
    except (OSError, ValueError) as exc:
        raise _Stop(Outcome.infra_error, ErrorKind.start_failed, f"{path}: {exc}".splitlines()[0]) from None


#: Credentials that must never reach a harness (DESIGN §5: the rollout token is the sandbox's
#: only credential). Matters in the plain-process fallback, which inherits the host env.
_SECRET_NAMES = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENROUTER_API_KEY",
                 "GEMINI_API_KEY", "GOOGLE_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "GITHUB_TOKEN",
                 "GH_TOKEN", "OPENFORGE_ADMIN_KEY", "OPENFORGE_DB", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AZURE_OPENAI_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "KUBECONFIG", "PREFECT_API_KEY"}
_SECRET_SUFFIXES = ("_API_KEY", "_SECRET", "_SECRET_KEY", "_PASSWORD", "_ACCESS_TOKEN", "_AUTH_TOKEN")


def _is_secret(name: str) -> bool:
    upper = name.upper()
    return upper in _SECRET_NAMES or upper.endswith(_SECRET_SUFFIXES)


def sandbox_env(opts: RunnerOptions) -> dict[str, str]:
    """The environment harness, services and verifier see: the runner's own, minus host
    credentials, plus the sandbox paths (the adapters add the rollout token themselves)."""
    env = {k: v for k, v in os.environ.items() if not _is_secret(k)}
    root = str(package_root())
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.update(LOGS_DIR=str(opts.logs_dir), WORKSPACE=str(opts.workspace), TESTS_DIR=str(opts.tests_dir),
               OPENFORGE_MODEL=opts.model)
    if opts.base_url:
        env["OPENFORGE_BASE_URL"] = opts.base_url
    return env


def _print_phase(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def run_rollout(opts: RunnerOptions, emit: Callable[[str], None] = _print_phase) -> RunnerReport:
    """Run one rollout; ``emit`` receives the ``OPENFORGE_PHASE ...`` lines."""
    start = time.monotonic()
    timings: dict[str, float] = {}
    report = RunnerReport(status=Outcome.ok, harness=opts.harness, timings=timings)
    group: ServiceGroup | None = None
    home: Path | None = None
    jail: Jail | None = None
    verifier_home: Path | None = None
    agent_log = opts.logs_dir / "agent" / "harness.log"
    phases = envvars.take()  # the task's env tables, resolved on the host by the backend
    try:
        cfg = read_task_config(opts.task_dir)
        if opts.wait_for is not None:
            timings["wait_for"] = round(await _wait_for(opts.wait_for), 3)
        try:
            harness = get_harness(opts.harness)
        except UnknownHarness as exc:
            raise _Stop(Outcome.infra_error, ErrorKind.harness_missing, str(exc)) from None
        agent_timeout = opts.agent_timeout or cfg.agent.timeout_sec
        verifier_timeout = opts.verifier_timeout or cfg.verifier.timeout_sec
        for d in (opts.workspace, opts.logs_dir / "agent", opts.logs_dir / "verifier"):
            d.mkdir(parents=True, exist_ok=True)
        try:
            jail = choose_jail(opts.agent_jail, agent_uid=opts.agent_uid,
                               hidden=[opts.tests_dir, opts.logs_dir / "verifier"],
                               tmp_size_mb=int(cfg.environment.storage_mb))
            if opts.agent_user is not None:
                agent_as = honour_agent_user(jail, opts.agent_user)
                log.info("[agent] user = %r: the harness runs as uid %d gid %d", opts.agent_user, agent_as.uid, agent_as.gid)
            verifier_as = verifier_identity(opts.verifier_user)
        except (JailError, UserError) as exc:
            raise _Stop(Outcome.infra_error, ErrorKind.start_failed, str(exc)) from None
        report.agent_jail = jail.kind
        env = {**sandbox_env(opts), **phases.get("environment", {})}
        services = list(cfg.openforge.services)
        services_url: str | None = None

        if services:
            t = time.monotonic()
            fixtures = opts.task_dir / "environment" / "fixtures"
            group = ServiceGroup(services, fixtures, python=sys.executable, env=env, cwd=opts.workspace,
                                 log_path=opts.logs_dir / "services.log", timeout=opts.service_timeout,
                                 app_factory=_app_factory(services))
            try:
                services_url = await group.start()
            except ServiceError as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.service_failed, str(exc)) from None
            finally:
                timings["services"] = round(time.monotonic() - t, 3)
            env[SERVICES_URL_ENV] = services_url
            env["CLAW_PORT"] = services_url.rsplit(":", 1)[-1]

        if cfg.environment.healthcheck is not None:
            try:
                timings["healthcheck"] = round(await wait_healthy(
                    cfg.environment.healthcheck, env=env, cwd=opts.workspace,
                    log_path=opts.logs_dir / "healthcheck.log"), 3)
            except HealthcheckError as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.start_failed, str(exc)) from None

        steps = list(cfg.steps or [])
        if steps and cfg.verifier.mode == "separate":
            raise _Stop(Outcome.infra_error, ErrorKind.start_failed,
                        "multi-step tasks with [verifier] environment_mode = 'separate' are not run yet")
        step_rewards: dict[str, dict[str, float]] = {}
        for index, step in enumerate(steps or [None]):
            name = step.name if step is not None else None
            last = index == max(len(steps), 1) - 1
            instruction_path, solution_dir = opts.task_dir / "instruction.md", opts.solution_dir
            step_agent_timeout, step_verifier_timeout = agent_timeout, verifier_timeout
            if step is not None:
                instruction_path = opts.task_dir / "steps" / step.name / "instruction.md"
                solution_dir = opts.solution_dir / "steps" / step.name if opts.solution_dir else None
                step_agent_timeout = opts.agent_timeout or step.agent.timeout_sec or cfg.agent.timeout_sec
                if not opts.verifier_timeout and "timeout_sec" in step.verifier.model_fields_set:
                    step_verifier_timeout = step.verifier.timeout_sec
            key = f"_{name}" if name else ""

            # -- agent -----------------------------------------------------------------
            home = Path(tempfile.mkdtemp(prefix="openforge-harness-home-"))
            jail.hand_over([home, opts.logs_dir / "agent"])
            ctx = HarnessContext(
                instruction=instruction_path.read_text(encoding="utf-8"),
                task_dir=opts.task_dir, workspace=opts.workspace, logs_dir=opts.logs_dir / "agent", home=home,
                base_url=opts.base_url, token=opts.token, model=opts.model, options=opts.harness_options,
                solution_dir=solution_dir, tools=load_tools_file(opts.task_dir / "environment" / "tools.json"),
                services_url=services_url, skills=skill_files(services), env={},
            )
            try:
                plan = harness.plan(ctx)
            except HarnessMissing as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.harness_missing, str(exc)) from None
            except HarnessConfigError as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.start_failed, str(exc)) from None
            if harness.uses_model and not opts.base_url:
                log.warning("harness %s runs without a base URL (no proxy given)", harness.name)
            log.info("harness %s%s: %s", harness.name, f" (step {name})" if name else "", plan.argv[:3])
            harness_env = {**env, **plan.env, **jail.env}
            if harness.name == "oracle":  # [solution].env belongs to the oracle's solve.sh
                harness_env.update(phases.get("solution", {}))
            argv = jail.wrap(plan.argv, home=home, env_home=harness_env.get("HOME"))
            try:
                result = await run_process(argv, env=harness_env, cwd=plan.cwd or opts.workspace,
                                           log_path=agent_log, timeout=step_agent_timeout, user=jail.user,
                                           group=jail.group,
                                           engine_seconds=engine_clock(opts.base_url, opts.token)
                                           if harness.uses_model else None)
            except OSError as exc:  # exec failed: binary vanished, not executable, ...
                raise _Stop(Outcome.infra_error, ErrorKind.harness_crash, f"harness {harness.name}: {exc}") from None
            # Nothing the agent started may outlive its phase (daemons, setsid, double forks).
            try:
                left = await jail.empty()
            except JailError as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.start_failed, str(exc)) from None
            if left:
                log.info("agent jail: killed %d process(es) left after the harness", left)
            # A third-party harness's final reply, where it declares it lands → final_answer.txt.
            await asyncio.to_thread(deliver_final_reply, harness, ctx)
            shutil.rmtree(home, ignore_errors=True)
            home = None
            # The rollout token is revoked for model calls from here on (the report still goes in);
            # a multi-step task keeps it until its last step's agent is done.
            if last and opts.base_url and opts.token and not await post_agent_done(opts.base_url, opts.token):
                log.warning("the proxy did not acknowledge agent-done; the token was not revoked")
            timings[f"agent{key}"] = round(result.seconds, 3)
            verdict = classify_exit(harness.name, result.returncode, result.timed_out, tail(agent_log, 20_000),
                                    opts.logs_dir / "agent" / OUTCOME_FILE)
            if not verdict.proceed:
                raise _Stop(verdict.status, verdict.error_kind or ErrorKind.harness_crash, verdict.error or "")
            if result.timed_out:
                report.error = f"agent timed out after {step_agent_timeout:g}s; workspace verified as left"

            # -- verifier --------------------------------------------------------------
            if cfg.verifier.mode == "separate":
                # A fresh verifier sandbox gets the artifacts; no tests come into this one.
                copied = await asyncio.to_thread(hand_over_artifacts, opts.workspace, opts.logs_dir,
                                                 list(cfg.verifier.artifacts))
                report.checks = {"separate_verifier": {"artifacts": len(copied)}}
                return report
            if name is not None:  # the previous step's tests go before this step's come in
                (opts.tests_dir / "test.sh").unlink(missing_ok=True)
            emit(PHASE_PREFIX + "agent_done" + (f" step={name}" if name else ""))
            try:
                timings[f"wait_tests{key}"] = round(await wait_for_tests(opts.tests_dir, step_verifier_timeout), 3)
                t = time.monotonic()
                # The verifier's own HOME and TMPDIR: nothing the agent wrote is on its paths.
                verifier_home = Path(tempfile.mkdtemp(prefix="openforge-verifier-home-"))
                verifier_env = {**env, **phases.get("verifier", {}), "HOME": str(verifier_home),
                                "TMPDIR": str(verifier_home), "PYTHONNOUSERSITE": "1"}
                if verifier_as is not None:  # its HOME, tests and reward dir are that user's
                    for path in (verifier_home, opts.tests_dir, opts.logs_dir / "verifier"):
                        await asyncio.to_thread(chown_tree, path, verifier_as.uid, verifier_as.gid)
                    if verifier_as.name:
                        verifier_env.update(USER=verifier_as.name, LOGNAME=verifier_as.name)
                try:
                    v = await run_verifier(opts.tests_dir, env=verifier_env, cwd=opts.workspace,
                                           verifier_logs=opts.logs_dir / "verifier", timeout=step_verifier_timeout,
                                           user=verifier_as.uid if verifier_as else None,
                                           group=verifier_as.gid if verifier_as else None)
                finally:
                    timings[f"verifier{key}"] = round(time.monotonic() - t, 3)
                    shutil.rmtree(verifier_home, ignore_errors=True)
                    verifier_home = None
            except VerifierError as exc:
                raise _Stop(Outcome.infra_error, ErrorKind.verifier_error,
                            (f"step {name}: " if name else "") + str(exc)) from None
            if step is None:
                report.reward = v.reward
                report.checks = v.checks
                report.metrics = v.metrics
                break
            step_rewards[step.name] = {**v.metrics, "reward": v.reward}
            await asyncio.to_thread(_keep_step_verifier_logs, opts.logs_dir / "verifier", step.name)
            if not last and not _meets(step.min_reward, step_rewards[step.name]):
                log.info("step %s below min_reward %s: the remaining steps are skipped", step.name, step.min_reward)
                break
        if steps:
            report.metrics = combine_step_rewards(list(step_rewards.values()), cfg.multi_step_reward_strategy or "mean")
            report.reward = report.metrics.get("reward", 0.0)
            report.checks = {"steps": step_rewards}
        if cfg.artifacts:
            try:
                copied = await asyncio.to_thread(collect_task_artifacts, list(cfg.artifacts), workspace=opts.workspace,
                                                 logs_dir=opts.logs_dir, workdir=cfg.environment.workdir or "/app")
                log.info("artifacts: collected %s into %s", copied, opts.logs_dir / "artifacts")
            except (OSError, ValueError) as exc:  # a missing or unreadable artifact never sinks the reward
                log.warning("artifacts: %s", exc)
    except _Stop as stop:
        report.status, report.error_kind, report.error = stop.status, stop.kind, stop.error
        report.reward = 0.0 if stop.status == Outcome.policy_error else None
        report.logs = tail(agent_log, 2000) or None
    except Exception as exc:
        log.exception("runner failed")
        report.status, report.error_kind = Outcome.infra_error, ErrorKind.start_failed.value
        report.error, report.reward = f"runner error: {type(exc).__name__}: {exc}", None
    finally:
        if group is not None:
            await group.stop()
        if jail is not None and jail.kind != "none":
            try:
                await jail.empty()
            except JailError as exc:
                log.warning("agent jail not empty at the end: %s", exc)
        for scratch in (home, verifier_home):
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
        timings["total"] = round(time.monotonic() - start, 3)
        report.timings = timings
    return report


def _app_factory(services: list[str]) -> AppFactory | None:
    """The ASGI app factory of the domain hosting ``services`` (served on a thread of the
    runner), or None: the launcher process (which also reports services no domain hosts)."""
    try:
        return domain_for(services).app_factory
    except UnknownServices:
        return None


async def _wait_for(path: Path, timeout: float = WAIT_FOR_TIMEOUT_S) -> float:
    """Wait until the backend writes ``path`` (compose ``depends_on`` met), then remove it."""
    start = time.monotonic()
    while not path.exists():
        if time.monotonic() - start > timeout:
            raise _Stop(Outcome.infra_error, ErrorKind.start_failed,
                        f"{path} did not appear within {timeout:.0f}s (compose depends_on not met)")
        await asyncio.sleep(0.1)
    path.unlink(missing_ok=True)
    return time.monotonic() - start


def honour_agent_user(jail: Jail, value: str) -> SandboxUser:
    """Make the ``uid`` jail run the harness as task.toml's ``[agent] user``; one-line
    refusal when the jail cannot switch users or the user is root (the jail's sweep and
    leftover checks work by uid: a root agent could reach the verifier)."""
    if jail.kind != "uid":
        raise JailError(f"[agent] user = {value!r}: needs the 'uid' agent jail (--agent-jail uid), not {jail.kind!r}")
    who = resolve_user(value, "[agent] user")
    if who.uid == 0:
        raise UserError(f"[agent] user = {value!r} is uid 0: the agent never runs as root (it could reach the verifier)")
    jail.agent_uid, jail.agent_gid = who.uid, who.gid
    return who


def verifier_identity(value: str | None) -> SandboxUser | None:
    """task.toml's ``[verifier] user`` to run tests/test.sh as; None when it is the runner's
    own. Switching needs a root runner (one-line refusal otherwise)."""
    if value is None:
        return None
    who = resolve_user(value, "[verifier] user")
    if (who.uid, who.gid) == (os.geteuid(), os.getegid()):
        return None
    if os.geteuid() != 0:
        raise UserError(f"[verifier] user = {value!r}: the runner (uid {os.geteuid()}) cannot switch to uid {who.uid}")
    return who


def _meets(threshold: float | dict[str, float] | None, rewards: dict[str, float]) -> bool:
    """Harbor's ``min_reward``: a float gates ``reward``; a dict gates each key (missing: -inf)."""
    if threshold is None:
        return True
    if isinstance(threshold, dict):
        return all(rewards.get(k, float("-inf")) >= v for k, v in threshold.items())
    return rewards.get("reward", float("-inf")) >= threshold


def combine_step_rewards(results: list[dict[str, float]], strategy: str) -> dict[str, float]:
    """Harbor's ``multi_step_reward_strategy``: ``final`` = the last verified step's rewards;
    ``mean`` = per-key means over the verified steps (a key a step lacks counts 0)."""
    if not results:
        return {"reward": 0.0}
    if strategy == "final":
        return dict(results[-1])
    keys = sorted({k for r in results for k in r})
    return {k: sum(r.get(k, 0.0) for r in results) / len(results) for k in keys}


def _keep_step_verifier_logs(verifier_logs: Path, step: str) -> None:
    """A step's verifier outputs under ``<logs>/verifier/steps/<step>/`` (the next step's
    verifier starts from a clean reward.txt / reward.json)."""
    dest = verifier_logs / "steps" / step
    dest.mkdir(parents=True, exist_ok=True)
    for entry in verifier_logs.iterdir():
        if entry.name != "steps" and entry.is_file():
            shutil.copy2(entry, dest / entry.name)


def report_line(report: RunnerReport) -> str:
    from environments.records import RUNNER_REPORT_PREFIX

    return RUNNER_REPORT_PREFIX + report.model_dump_json()


def as_dict(report: RunnerReport) -> dict[str, Any]:
    return report.model_dump(mode="json")
