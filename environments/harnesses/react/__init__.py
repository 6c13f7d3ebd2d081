"""OpenForge's own ReACT harness: a tool loop over the OpenAI chat API (official ``openai``
SDK). Native ``tools`` when the endpoint supports them, else a text action protocol.
Run as ``python -m environments.harnesses.react ...`` (the ``react`` adapter does)."""

from environments.harnesses.react.loop import ReactConfig, ReactResult, run_react
from environments.harnesses.react.protocol import Action, ParseError, parse_action

__all__ = ["Action", "ParseError", "ReactConfig", "ReactResult", "parse_action", "run_react"]
