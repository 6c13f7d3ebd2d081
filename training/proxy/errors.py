"""Errors the proxy returns, rendered in the caller's own API format.

OpenAI (chat, Responses, models) callers get ``{"error": {"message", "type", "param", "code"}}``;
Anthropic Messages callers get ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

from typing import Literal

from training.proxy.wire import JSONResponse

Api = Literal["chat", "responses", "messages", "models", "admin"]

_OPENAI_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
_ANTHROPIC_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class ProxyError(Exception):
    """A request the proxy refuses or could not serve; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.retry_after = retry_after  # seconds, sent as Retry-After (clients back off, then retry)


def error_body(api: Api, status: int, message: str, *, code: str | None = None, param: str | None = None) -> dict:
    """The JSON body of an error for ``api`` (pure; tests call it directly)."""
    if api == "messages":
        kind = _ANTHROPIC_TYPE.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = _OPENAI_TYPE.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(api: Api, exc: ProxyError) -> JSONResponse:
    response = JSONResponse(
        error_body(api, exc.status, exc.message, code=exc.code, param=exc.param), status_code=exc.status
    )
    if exc.retry_after is not None:
        response.headers["retry-after"] = f"{exc.retry_after:g}"
    return response
