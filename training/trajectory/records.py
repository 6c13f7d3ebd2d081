"""Records of trajectory reconstruction: recorded calls in, samples and SFT examples out.

:class:`RecordedCall` normalises both shapes a call arrives in — a ``storage.models.ModelCall``
row or a dict of the proxy's ``GET /admin/rollouts/{id}/calls`` format. :class:`Sample` is
one trainable sequence (one call, or several merged calls) and is what trainers consume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

_CALL_FIELDS = (
    "index",
    "api",
    "request",
    "response",
    "prompt_token_ids",
    "response_token_ids",
    "response_logprobs",
    "finish_reason",
    "latency_ms",
    "policy_version",
    "status",
)


class RecordedCall(BaseModel):
    """One model call as the proxy recorded it."""

    model_config = ConfigDict(extra="ignore")

    index: int
    api: str = "chat"  # chat | responses | messages
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    prompt_token_ids: list[int] | None = None
    response_token_ids: list[int] | None = None
    response_logprobs: list[float] | None = None
    finish_reason: str | None = None
    latency_ms: float | None = None
    policy_version: int | None = None
    status: str = "ok"  # ok | error

    @field_validator("response_logprobs", mode="before")
    @classmethod
    def _plain_logprobs(cls, value: Any) -> Any:
        """Accept OpenAI-style ``[{"token", "logprob"}, ...]`` entries as well as floats."""
        if isinstance(value, list):
            return [v.get("logprob") if isinstance(v, dict) else v for v in value]
        return value

    @classmethod
    def from_any(cls, call: Any) -> RecordedCall:
        """From a proxy ``/calls`` dict, a ``ModelCall`` row, or a RecordedCall."""
        if isinstance(call, RecordedCall):
            return call
        if isinstance(call, dict):
            return cls.model_validate(call)
        fields = {name: getattr(call, name, None) for name in _CALL_FIELDS}
        return cls.model_validate({k: v for k, v in fields.items() if v is not None})

    @property
    def has_tokens(self) -> bool:
        return bool(self.prompt_token_ids) and bool(self.response_token_ids)


@dataclass
class Sample:
    """One trainable sequence: ``prompt_ids`` then ``response_ids`` (loss on the response only).

    ``loss_mask`` (same length as ``response_ids``) is 1 on tokens the policy produced and 0
    on tokens it did not (tool results between merged calls). ``response_logprobs`` are the
    behaviour policy's logprobs recorded by the engine (``None`` when the engine gave none:
    the trainer then treats the batch as on-policy). ``advantage`` is filled by
    :func:`training.trajectory.grpo.assign_group_advantages`.
    """

    rollout_id: str
    group_id: str
    call_index: int
    prompt_ids: list[int]
    response_ids: list[int]
    response_logprobs: list[float] | None
    reward: float  # r_t = gamma^(T-t) * r_T
    trajectory_reward: float  # R = r_T
    task_id: str | None = None
    loss_mask: list[int] | None = None
    advantage: float = 0.0
    call_indices: list[int] = field(default_factory=list)
    retokenized: bool = False
    policy_version: int | None = None
    finish_reason: str | None = None
    #: The sampling distribution the engine drew the response from (the call's request):
    #: the trainer scores the response under the same one, so that π_θ / π_old compares
    #: like with like. ``temperature = 0`` (greedy) is scored at temperature 1, unfiltered.
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        if self.loss_mask is None:
            self.loss_mask = [1] * len(self.response_ids)
        if not self.call_indices:
            self.call_indices = [self.call_index]
        if len(self.loss_mask) != len(self.response_ids):
            raise ValueError(
                f"sample {self.rollout_id}#{self.call_index}: loss_mask has {len(self.loss_mask)} "
                f"entries for {len(self.response_ids)} response tokens"
            )
        if self.response_logprobs is not None and len(self.response_logprobs) != len(self.response_ids):
            raise ValueError(
                f"sample {self.rollout_id}#{self.call_index}: {len(self.response_logprobs)} logprobs "
                f"for {len(self.response_ids)} response tokens"
            )

    @property
    def n_loss_tokens(self) -> int:
        return int(sum(self.loss_mask or ()))

    @property
    def sampling(self) -> tuple[float, float, int]:
        return (self.temperature, self.top_p, self.top_k)


def sampling_of(request: dict[str, Any] | None) -> tuple[float, float, int]:
    """``(temperature, top_p, top_k)`` of an engine request body, with the engines'
    defaults (1, 1, 0 = off) for what it leaves out; vLLM's ``top_k = -1`` means off."""
    request = request or {}

    def number(key: str, default: float) -> float:
        value = request.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default

    top_k = request.get("top_k")
    return (number("temperature", 1.0), number("top_p", 1.0),
            int(top_k) if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0 else 0)


@dataclass
class Trajectory:
    """A finished rollout's samples plus what GRPO and the SFT filters need to know."""

    rollout_id: str
    group_id: str
    status: str  # ok | policy_error (infra_error / timeout never become trajectories)
    reward: float  # R: verifier reward, or 0 for policy_error
    samples: list[Sample]
    calls: list[RecordedCall]
    task_id: str | None = None
    retokenized: bool = False
    advantage: float = 0.0

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    @property
    def n_response_tokens(self) -> int:
        return sum(s.n_loss_tokens for s in self.samples)


@dataclass
class SftExample:
    """One SFT sequence: ``input_ids`` with ``loss_mask`` 1 on the tokens to learn."""

    input_ids: list[int]
    loss_mask: list[int]
    rollout_id: str = ""
    task_id: str | None = None

    def __post_init__(self) -> None:
        if len(self.input_ids) != len(self.loss_mask):
            raise ValueError(
                f"SFT example {self.rollout_id}: {len(self.loss_mask)} mask entries for {len(self.input_ids)} tokens"
            )

    @classmethod
    def from_sample(cls, sample: Sample) -> SftExample:
        return cls(
            input_ids=list(sample.prompt_ids) + list(sample.response_ids),
            loss_mask=[0] * len(sample.prompt_ids) + list(sample.loss_mask or []),
            rollout_id=sample.rollout_id,
            task_id=sample.task_id,
        )
