"""Images in model calls: stored once by content hash, referenced from the recorded prompt,
and hidden from text-only engines.

- :func:`externalize_images` walks a request body (OpenAI chat ``image_url`` parts, Responses
  ``input_image`` parts, Anthropic ``image`` blocks with a base64 ``source``), writes each
  inline image to ``<blobs>/sha256/<hh>/<sha256>.<ext>`` (idempotent) and returns a copy
  where the part is ``{"type": "image_ref", "sha256", "path", "mime", "bytes", "source_type"}``
  (``path`` relative to the blob root). Recorded rows never hold the base64.
- :func:`inline_images` is the inverse, for consumers that need the pixels (VLM training).
- :func:`images_to_text` replaces image parts by a short text placeholder for engines that
  accept no images (the local text engine); ``accepts_images(engine)`` reads the engine's
  ``accepts_images`` attribute (default True).
Remote image URLs (http/https) are left as they are.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import os
from pathlib import Path
from typing import Any

PLACEHOLDER = "[image omitted: this model reads text only]"
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/webp": "webp", "image/gif": "gif"}


class ImageError(ValueError):
    """An inline image could not be decoded."""


def accepts_images(engine: Any) -> bool:
    return bool(getattr(engine, "accepts_images", True))


def _parse_data_url(url: str) -> tuple[str, bytes] | None:
    if not url.startswith("data:") or ";base64," not in url[:100]:
        return None
    head, payload = url.split(",", 1)
    mime = head[5:].split(";", 1)[0] or "application/octet-stream"
    try:
        return mime, base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"invalid base64 in a data: URL image ({exc})") from None


def _inline_image(part: dict[str, Any]) -> tuple[str, bytes] | None:
    """(mime, bytes) of an inline image part of any of the three APIs, else None."""
    kind = part.get("type")
    if kind == "image_url":
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        return _parse_data_url(url) if isinstance(url, str) else None
    if kind == "input_image":
        url = part.get("image_url")
        return _parse_data_url(url) if isinstance(url, str) else None
    if kind == "image":
        src = part.get("source")
        if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
            try:
                return str(src.get("media_type") or "image/png"), base64.b64decode(src["data"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ImageError(f"invalid base64 in an image block ({exc})") from None
    return None


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image", "image_ref")


class BlobStore:
    """Content-addressed files: ``<root>/sha256/<hh>/<sha256>.<ext>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def relpath(self, sha: str, mime: str) -> str:
        return f"sha256/{sha[:2]}/{sha}.{_EXT.get(mime, 'bin')}"

    def put(self, data: bytes, mime: str) -> tuple[str, str]:
        """Store ``data`` (once); returns (sha256, path relative to the root)."""
        sha = hashlib.sha256(data).hexdigest()
        rel = self.relpath(sha, mime)
        path = self.root / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return sha, rel

    def get(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def externalize_images(body: Any, store: BlobStore) -> tuple[Any, int]:
    """A copy of ``body`` with inline images stored in ``store`` and replaced by
    ``image_ref`` parts; returns (copy, number of images stored). Blocking file I/O."""
    count = 0

    def walk(node: Any) -> Any:
        nonlocal count
        if isinstance(node, dict):
            found = _inline_image(node)
            if found is not None:
                mime, data = found
                sha, rel = store.put(data, mime)
                count += 1
                return {"type": "image_ref", "sha256": sha, "path": rel, "mime": mime, "bytes": len(data),
                        "source_type": node.get("type")}
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(body), count


def has_inline_images(body: Any) -> bool:
    if isinstance(body, dict):
        return body.get("type") in ("image_url", "input_image", "image") or any(has_inline_images(v) for v in body.values())
    if isinstance(body, list):
        return any(has_inline_images(v) for v in body)
    return False


def inline_images(body: Any, store: BlobStore) -> Any:
    """The inverse of :func:`externalize_images`: ``image_ref`` parts back to inline images
    in their original API's shape."""
    if isinstance(body, dict):
        if body.get("type") == "image_ref":
            data = base64.b64encode(store.get(body["path"])).decode("ascii")
            mime, kind = body.get("mime", "image/png"), body.get("source_type", "image_url")
            if kind == "input_image":
                return {"type": "input_image", "image_url": f"data:{mime};base64,{data}"}
            if kind == "image":
                return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
            return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
        return {k: inline_images(v, store) for k, v in body.items()}
    if isinstance(body, list):
        return [inline_images(v, store) for v in body]
    return body


def images_to_text(chat: dict[str, Any], placeholder: str = PLACEHOLDER) -> dict[str, Any]:
    """A copy of a chat body whose image parts (inline or by reference) are text placeholders."""
    out = copy.copy(chat)
    messages = []
    for message in chat.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(is_image_part(p) for p in content):
            message = {**message, "content": [{"type": "text", "text": placeholder} if is_image_part(p) else p
                                              for p in content]}
        messages.append(message)
    out["messages"] = messages
    return out
