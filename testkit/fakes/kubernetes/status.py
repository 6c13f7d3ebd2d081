"""metav1.Status error objects, as the API server returns them, and the exception carrying one."""

from __future__ import annotations

from typing import Any


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def success_status(name: str, group: str, plural: str, uid: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": plural, "uid": uid}
    if group:
        details["group"] = group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


class ApiError(Exception):
    """An API error; ``body`` is the Status object sent with HTTP status ``code``."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.body = status_body(code, reason, message, details)

    @staticmethod
    def _details(name: str, group: str, plural: str) -> dict[str, Any]:
        d: dict[str, Any] = {"name": name, "kind": plural}
        if group:
            d["group"] = group
        return d

    @classmethod
    def not_found(cls, plural: str, name: str, group: str = "") -> ApiError:
        res = f"{plural}.{group}" if group else plural
        return cls(404, "NotFound", f'{res} "{name}" not found', cls._details(name, group, plural))

    @classmethod
    def already_exists(cls, plural: str, name: str, group: str = "") -> ApiError:
        res = f"{plural}.{group}" if group else plural
        return cls(409, "AlreadyExists", f'{res} "{name}" already exists', cls._details(name, group, plural))

    @classmethod
    def conflict(cls, plural: str, name: str, group: str = "") -> ApiError:
        res = f"{plural}.{group}" if group else plural
        return cls(409, "Conflict", f'Operation cannot be fulfilled on {res} "{name}": the object has been '
                   "modified; please apply your changes to the latest version and try again",
                   cls._details(name, group, plural))

    @classmethod
    def invalid(cls, kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
        """``causes``: (field, reason, message) with reason FieldValueRequired/FieldValueInvalid/..."""
        text = ", ".join(f"{f}: {m}" for f, _r, m in causes)
        msg = f'{kind} "{name}" is invalid: ' + (f"[{text}]" if len(causes) > 1 else text)
        details = {"name": name, "group": group, "kind": kind,
                   "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes]}
        return cls(422, "Invalid", msg, details)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(cls, message: str) -> ApiError:
        return cls(403, "Forbidden", message)

    @classmethod
    def gone(cls, message: str) -> ApiError:
        return cls(410, "Expired", message)
