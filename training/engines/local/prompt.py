"""OpenAI chat messages → prompt token ids, through the model's own chat template.

Messages are normalised first: content-part lists are flattened to text (text-only
models: image parts are rejected), ``developer`` turns become ``system`` turns, ``null``
content becomes ``""``. Tools are rendered by the chat template when it supports them
(:func:`template_supports_tools`), otherwise :func:`inline_tools` rewrites the messages
so that any plain template can render them.
"""

from __future__ import annotations

from typing import Any

from training.engines.base import EngineRequestError
from training.engines.local.tools import inline_tools, template_supports_tools

_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
_TEXT_PARTS = {"text", "input_text", "output_text"}


def _text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces: list[str] = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
                pieces.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise EngineRequestError(
                    f"messages[{index}].content: part type {kind!r} is not supported by this text-only model",
                    param="messages",
                )
        return "".join(pieces)
    raise EngineRequestError(f"messages[{index}].content must be a string or a list of parts", param="messages")


def normalise_messages(messages: Any) -> list[dict[str, Any]]:
    """Validate an OpenAI ``messages`` list and return plain-text copies of its turns."""
    if not isinstance(messages, list) or not messages:
        raise EngineRequestError("'messages' must be a non-empty list", param="messages")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            role = message.get("role") if isinstance(message, dict) else None
            raise EngineRequestError(f"messages[{i}].role {role!r} is not one of {sorted(_ROLES)}", param="messages")
        role = message["role"]
        turn: dict[str, Any] = {
            "role": {"developer": "system", "function": "tool"}.get(role, role),
            "content": _text(message.get("content"), i),
        }
        if role == "assistant" and message.get("tool_calls"):
            turn["tool_calls"] = message["tool_calls"]
        for key in ("tool_call_id", "name"):
            if message.get(key) is not None:
                turn[key] = message[key]
        out.append(turn)
    return out


def render_prompt(
    tokenizer: Any,
    messages: Any,
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
    continue_final_message: bool = False,
) -> list[int]:
    """Token ids of the prompt for ``messages`` (and ``tools``) under the tokenizer's template."""
    turns = normalise_messages(messages)
    if tools is not None and not isinstance(tools, list):
        raise EngineRequestError("'tools' must be a list", param="tools")
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        raise EngineRequestError("the model's tokenizer has no chat template", param="messages")
    kwargs: dict[str, Any] = {}
    if tools and template_supports_tools(template):
        kwargs["tools"] = tools
    else:
        turns = inline_tools(turns, tools)
    try:
        text = tokenizer.apply_chat_template(
            turns,
            tokenize=False,
            add_generation_prompt=add_generation_prompt and not continue_final_message,
            continue_final_message=continue_final_message,
            **kwargs,
        )
    except Exception as exc:  # jinja errors: a template that rejects this conversation
        raise EngineRequestError(f"chat template failed on these messages: {exc}", param="messages") from exc
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
