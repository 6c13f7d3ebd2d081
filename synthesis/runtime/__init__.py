"""Agent runtimes for synthesis: the protocol and the ``claude`` / ``openai`` backends."""

from synthesis.runtime.base import AgentResult, AgentRuntime, AgentTool, Budget, ToolError

__all__ = ["AgentResult", "AgentRuntime", "AgentTool", "Budget", "ToolError"]
