"""Hand-built recorded calls in the proxy's ``/calls`` format and a tiny real word-level tokenizer:
the inputs of trajectory-reconstruction and trainer tests and of ``scripts/gpu_trainer_check.py``
(no downloads)."""

from __future__ import annotations

from typing import Any

WORDS = [
    "[PAD]", "[UNK]", "[EOS]", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>",
    "hello", "world", "list", "files", "done", "ok", "ls", "cat", "a.txt", "b.txt", "answer", "42",
]
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def tiny_tokenizer() -> Any:
    """A real ``PreTrainedTokenizerFast`` over a 20-word vocabulary with a chat template."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    fast.chat_template = TEMPLATE
    return fast


def chat_call(
    index: int,
    prompt_ids: list[int] | None,
    response_ids: list[int] | None,
    *,
    logprobs: list[float] | None = None,
    tool: tuple[str, str] | None = None,
    text: str = "ok",
    history: list[dict[str, Any]] | None = None,
    status: str = "ok",
) -> dict[str, Any]:
    """One call in the proxy's ``/calls`` format (OpenAI chat)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool is not None:
        message["tool_calls"] = [
            {"id": f"call_{index}", "type": "function", "function": {"name": tool[0], "arguments": tool[1]}}
        ]
    if logprobs is None and response_ids is not None:
        logprobs = [-0.5] * len(response_ids)
    return {
        "index": index,
        "api": "chat",
        "request": {"model": "policy", "messages": history or [{"role": "user", "content": "hello"}]},
        "response": {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]} if status == "ok" else None,
        "prompt_token_ids": prompt_ids,
        "response_token_ids": response_ids,
        "response_logprobs": logprobs if response_ids is not None else None,
        "finish_reason": "stop",
        "latency_ms": 1.0,
        "status": status,
    }


def rollout(rollout_id: str, status: str = "ok", reward: float | None = 1.0, group_id: str = "g", task_id: str = "t") -> dict[str, Any]:
    """One rollout row as trajectory reconstruction reads it."""
    return {"rollout_id": rollout_id, "status": status, "reward": reward, "group_id": group_id, "task_id": task_id}
