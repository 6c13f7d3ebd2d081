"""Policy engines behind the proxy: any OpenAI-compatible URL (vLLM), or the in-process
local transformers engine. All implement :class:`training.engines.base.ChatEngine`."""
