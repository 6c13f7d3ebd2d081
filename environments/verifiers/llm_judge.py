"""An LLM-judge verifier for open-ended tasks (open-web browsing, where no site state can be
read): ask any OpenAI-compatible chat endpoint whether the agent's result satisfies the
task, and turn its score into a reward.

The judge sees a prompt rendered from a configurable template (fields ``{instruction}``,
``{answer}``, ``{final_url}``, ``{final_title}``, ``{trajectory}``) and must reply with a
JSON object ``{"score": <0..1>, "rationale": "..."}``; scores on a 0-10 or 0-100 scale
are accepted and rescaled. ``reward = 1.0 if score >= threshold else 0.0`` (or the score
itself with ``binary=False``). A reply without a readable score is an error, never a pass.

CLI (for a task's tests/test.sh): ``python -m environments.verifiers.llm_judge
--instruction-file F [--answer-file F] [--trajectory-file F] --out-dir $LOGS_DIR/verifier``
with ``OPENFORGE_JUDGE_URL`` / ``OPENFORGE_JUDGE_MODEL`` / ``OPENFORGE_JUDGE_TOKEN`` (a key
entering a sandbox is the task author's choice: prefer a keyless in-cluster endpoint).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from environments.verifiers.reward_files import CHECKS_FILE, reward_files

log = logging.getLogger(__name__)

DEFAULT_TEMPLATE = """You are grading whether a web-browsing agent completed a task.

Task given to the agent:
{instruction}

The agent's final answer (may be empty):
{answer}

Page the agent ended on: {final_title} <{final_url}>

Actions the agent took:
{trajectory}

Judge only from this evidence. Reply with one JSON object:
{{"score": <number from 0 to 1, 1 = fully and correctly completed>, "rationale": "<one or two sentences>"}}"""


class JudgeError(RuntimeError):
    """The judge endpoint failed or gave no readable score (the message says which)."""


@dataclass
class JudgeConfig:
    base_url: str  # OpenAI-compatible, ends in /v1
    model: str = "judge"
    api_key: str | None = None
    template: str = DEFAULT_TEMPLATE
    threshold: float = 0.5
    binary: bool = True
    temperature: float = 0.0
    max_tokens: int = 400
    timeout: float = 120.0
    retries: int = 2

    @classmethod
    def from_env(cls, **overrides: Any) -> JudgeConfig:
        """``OPENFORGE_JUDGE_URL``, ``_MODEL``, ``_TOKEN``, ``_THRESHOLD``, ``_TEMPLATE_FILE``."""
        url = overrides.pop("base_url", None) or os.environ.get("OPENFORGE_JUDGE_URL")
        if not url:
            raise JudgeError("no judge endpoint: set OPENFORGE_JUDGE_URL (an OpenAI-compatible base URL ending in /v1)")
        cfg = cls(base_url=url, model=os.environ.get("OPENFORGE_JUDGE_MODEL", "judge"),
                  api_key=os.environ.get("OPENFORGE_JUDGE_TOKEN") or None)
        if os.environ.get("OPENFORGE_JUDGE_THRESHOLD"):
            cfg.threshold = float(os.environ["OPENFORGE_JUDGE_THRESHOLD"])
        if os.environ.get("OPENFORGE_JUDGE_TEMPLATE_FILE"):
            cfg.template = Path(os.environ["OPENFORGE_JUDGE_TEMPLATE_FILE"]).read_text(encoding="utf-8")
        for k, v in overrides.items():
            if v is not None:
                setattr(cfg, k, v)
        return cfg


@dataclass
class Evidence:
    instruction: str
    answer: str = ""
    final_url: str = ""
    final_title: str = ""
    trajectory: str = ""


@dataclass
class JudgeResult:
    reward: float
    score: float
    passed: bool
    rationale: str
    raw: str


_SCORE = re.compile(r"\"?score\"?\s*[:=]\s*\"?(-?\d+(?:\.\d+)?)\s*(/\s*(\d+))?", re.IGNORECASE)


def render_prompt(template: str, evidence: Evidence) -> str:
    fields = {k: (v if v else "(none)") for k, v in asdict(evidence).items()}
    try:
        return template.format(**fields)
    except (KeyError, IndexError) as exc:
        raise JudgeError(f"judge template names an unknown field {exc} (known: {', '.join(fields)})") from None


def _scale(value: float, out_of: float | None) -> float:
    if out_of:
        return value / out_of
    if value <= 1.0:
        return value
    return value / 10.0 if value <= 10.0 else value / 100.0


def parse_verdict(text: str) -> tuple[float, str]:
    """(score in [0, 1], rationale) from the judge's reply; raises :class:`JudgeError`."""
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("score"), (int, float, str)):
            try:
                score = _scale(float(obj["score"]), None)
            except ValueError:
                raise JudgeError(f"judge score is not a number: {obj['score']!r}") from None
            return min(max(score, 0.0), 1.0), str(obj.get("rationale") or obj.get("reason") or "").strip()
        i = text.find("{", end)
    m = _SCORE.search(text)
    if m:
        score = _scale(float(m.group(1)), float(m.group(3)) if m.group(3) else None)
        return min(max(score, 0.0), 1.0), text.strip()[:1000]
    raise JudgeError(f"judge reply has no score: {text.strip()[:200]!r}")


async def judge(evidence: Evidence, config: JudgeConfig, client: httpx.AsyncClient | None = None) -> JudgeResult:
    """Ask the judge; raises :class:`JudgeError` when no verdict can be had."""
    prompt = render_prompt(config.template, evidence)
    body = {"model": config.model, "messages": [{"role": "user", "content": prompt}],
            "temperature": config.temperature, "max_tokens": config.max_tokens}
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    url = config.base_url.rstrip("/") + "/chat/completions"
    own = client is None
    http = client or httpx.AsyncClient(timeout=config.timeout)
    try:
        last: str = ""
        for attempt in range(config.retries + 1):
            try:
                resp = await http.post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                last = f"judge endpoint {url} unreachable: {type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    try:
                        text = resp.json()["choices"][0]["message"]["content"] or ""
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise JudgeError(f"judge endpoint {url} returned no chat completion") from None
                    score, rationale = parse_verdict(text)
                    passed = score >= config.threshold
                    reward = (1.0 if passed else 0.0) if config.binary else score
                    return JudgeResult(reward=reward, score=score, passed=passed, rationale=rationale, raw=text)
                last = f"judge endpoint {url} answered HTTP {resp.status_code}: {resp.text[:200]}"
                if resp.status_code < 500 and resp.status_code != 429:
                    break
            if attempt < config.retries:
                await asyncio.sleep(0.5 * 2**attempt)
        raise JudgeError(last)
    finally:
        if own:
            await http.aclose()


def trajectory_summary(path: Path, limit: int = 40) -> tuple[str, str, str]:
    """(action lines, final URL, final title) from a browser-use ``trajectory.json``."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    steps = doc.get("steps", [])
    lines = [f"{s.get('step')}. {s.get('url', '')}: "
             + (json.dumps(s.get("action")) if s.get("kind") == "action" else "(malformed reply)")
             + f" -> {s.get('result', '')}" for s in steps[-limit:]]
    last = steps[-1] if steps else {}
    return "\n".join(lines), str(last.get("url", "")), str(last.get("title", ""))


def write_reward(out_dir: Path, result: JudgeResult | None, error: str | None) -> float:
    """``reward.txt``, ``reward.json`` (numeric: ``reward``, ``check.judge_passed`` and, when
    the judge answered, ``judge.score``) and ``checks.json`` (checks, the judge's reply, the
    error); an error scores 0."""
    reward = result.reward if result is not None and error is None else 0.0
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "reward.txt").write_text(f"{reward}\n", encoding="utf-8")
    flat, detail = reward_files(reward, {"judge_passed": bool(result and result.passed and error is None)},
                                judge=asdict(result) if result else None, error=error)
    if result is not None:
        flat["judge.score"] = float(result.score)
    (out_dir / "reward.json").write_text(json.dumps(flat, indent=2), encoding="utf-8")
    (out_dir / CHECKS_FILE).write_text(json.dumps(detail, indent=2), encoding="utf-8")
    return reward


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="llm-judge %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m environments.verifiers.llm_judge")
    p.add_argument("--instruction-file", type=Path, required=True)
    p.add_argument("--answer-file", type=Path)
    p.add_argument("--trajectory-file", type=Path)
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--base-url")
    p.add_argument("--model")
    p.add_argument("--threshold", type=float)
    ns = p.parse_args(argv)
    evidence = Evidence(instruction=ns.instruction_file.read_text(encoding="utf-8"))
    if ns.answer_file and ns.answer_file.is_file():
        evidence.answer = ns.answer_file.read_text(encoding="utf-8")
    if ns.trajectory_file and ns.trajectory_file.is_file():
        evidence.trajectory, evidence.final_url, evidence.final_title = trajectory_summary(ns.trajectory_file)
    result, error = None, None
    try:
        cfg = JudgeConfig.from_env(base_url=ns.base_url, model=ns.model, threshold=ns.threshold)
        result = asyncio.run(judge(evidence, cfg))
    except JudgeError as exc:
        error = str(exc)
        log.error("%s", error)
    reward = write_reward(ns.out_dir, result, error)
    print(json.dumps({"reward": reward, "rationale": result.rationale if result else None, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
