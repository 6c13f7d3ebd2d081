"""A fake vLLM OpenAI server (stdlib HTTP) standing in for the external vLLM process.

It speaks the slice of vLLM's HTTP API that :mod:`training.engines.vllm` uses: ``GET
/health``, ``GET /v1/models``, ``POST /v1/chat/completions`` (vLLM wire format with token ids
and logprobs; content ``"bad"`` → 400, ``"boom"`` → 500), and the dev-mode ``POST
/collective_rpc`` and ``POST /reset_prefix_cache``. It records what it was sent at
``GET /_calls``. Run in-process with :func:`serve`, or as a process with the same flags as
``python -m vllm.entrypoints.openai.api_server``.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def make_handler(model: str, served_name: str, calls: list[dict[str, Any]], api_key: str | None):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if api_key and self.headers.get("Authorization") != f"Bearer {api_key}":
                self._send(401, {"error": {"message": "unauthorised"}})
                return False
            return True

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif self.path == "/_calls":
                self._send(200, calls)
            elif self.path == "/v1/models" and self._authorised():
                self._send(200, {"object": "list", "data": [{"id": served_name, "object": "model", "root": model}]})
            elif self.path != "/v1/models":
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if not self._authorised():
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            calls.append({"path": self.path, "body": body})
            if self.path in ("/collective_rpc", "/reset_prefix_cache"):
                self._send(200, {"results": []} if self.path == "/collective_rpc" else {})
                return
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": "not found"}})
                return
            content = body["messages"][-1]["content"]
            if content == "bad":
                self._send(400, {"error": {"message": "This model's maximum context length is 8 tokens"}})
                return
            if content == "boom":
                self._send(500, {"error": {"message": "engine dead"}})
                return
            self._send(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "model": body.get("model"),
                "prompt_token_ids": [1, 2, 3],
                "choices": [{
                    "index": 0, "finish_reason": "stop", "token_ids": [7, 8],
                    "message": {"role": "assistant", "content": f"served {model}"},
                    "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -0.25}]},
                }],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            })

    return Handler


def serve(host: str, port: int, model: str, served_name: str = "policy", api_key: str | None = None):
    """Start the fake in a daemon thread; returns (server, calls)."""
    calls: list[dict[str, Any]] = []
    server = ThreadingHTTPServer((host, port), make_handler(model, served_name, calls, api_key))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", default="policy")
    parser.add_argument("--api-key", default=None)
    args, _unknown = parser.parse_known_args()
    calls: list[dict[str, Any]] = []
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.model, args.served_model_name, calls, args.api_key))
    server.serve_forever()


if __name__ == "__main__":
    main()
