"""Fakes of external boundaries (named as such): protocol-faithful stand-ins for services
we cannot reach from a test or a benchmark — ``kubernetes`` (an API server + simulated
kubelet the official clients talk to over HTTP) and ``vllm`` (a vLLM OpenAI-compatible
server). Never mocks of our own code."""
