"""The chat template OpenForge saves with its default policy model.

SmolLM2's own template (ChatML) knows nothing about tools and breaks on assistant messages
whose ``content`` is null. This one keeps SmolLM2's ChatML framing and default system
prompt and adds Hermes-style tools: the tool schemas go into the system turn inside
``<tools></tools>``, the model calls a tool by emitting
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, earlier calls in the history
are rendered the same way, and tool results come back as ``tool`` turns wrapped in
``<tool_response></tool_response>``. Because the template lives in the model folder, a vLLM
server given the same folder (``--tool-call-parser hermes``) renders prompts identically.
"""

from __future__ import annotations

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)



def _jinja_str(text: str) -> str:
    """``text`` as a single-quoted Jinja string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


# Jinja (Hugging Face's sandboxed environment: ``tojson`` keeps key order).
CHATML_TOOLS_TEMPLATE = (
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set system_text = messages[0]['content'] -%}{%- set rest = messages[1:] -%}"
    "{%- else -%}"
    "{%- set system_text = '" + DEFAULT_SYSTEM_PROMPT + "' -%}{%- set rest = messages -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>system\\n' + system_text -}}"
    "{%- if tools -%}"
    "{{- '\\n\\n' + " + _jinja_str(TOOLS_PREAMBLE) + " -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- " + _jinja_str(TOOLS_POSTAMBLE) + " -}}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- for message in rest -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if message['content'] -%}{{- message['content'] -}}{%- endif -%}"
    "{%- if message['tool_calls'] -%}"
    "{%- for call in message['tool_calls'] -%}"
    "{%- if message['content'] or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    "{%- set fn = call['function'] if call['function'] is defined else call -%}"
    "{{- '<tool_call>\\n{\"name\": ' + (fn['name'] | tojson) + ', \"arguments\": ' -}}"
    "{%- if fn['arguments'] is string -%}{{- fn['arguments'] -}}"
    "{%- else -%}{{- fn['arguments'] | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- elif message['role'] == 'tool' -%}"
    "{{- '<|im_start|>tool\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
