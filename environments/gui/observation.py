"""Screenshot observations shared by the GUI harnesses (computer-use, browser-use).

- :func:`image_part` turns PNG bytes into an OpenAI chat content part
  (``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``);
- :func:`save_screenshot` writes ``<logs_dir>/screenshots/step_NNN.png``;
- :func:`png_size` reads width/height from a PNG header (no decoding);
- :func:`downscale_png` shrinks a screenshot before it is sent (Pillow; optional).

The proxy (training/proxy/images.py) stores the image bytes by content hash and keeps
only a reference in the recorded prompt.
"""

from __future__ import annotations

import base64
import io
import struct
from pathlib import Path
from typing import Any

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_DIR = "screenshots"


class NotAPng(ValueError):
    """The bytes are not a PNG image."""


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from the IHDR chunk of a PNG; raises :class:`NotAPng`."""
    if len(png) < 24 or not png.startswith(PNG_SIGNATURE) or png[12:16] != b"IHDR":
        raise NotAPng("not a PNG image (bad signature or missing IHDR)")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def data_url(png: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(png).decode('ascii')}"


def image_part(png: bytes, detail: str | None = None) -> dict[str, Any]:
    """An OpenAI chat ``image_url`` content part carrying ``png`` as a data: URL."""
    png_size(png)  # fail early on garbage
    url: dict[str, Any] = {"url": data_url(png)}
    if detail is not None:
        url["detail"] = detail
    return {"type": "image_url", "image_url": url}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def screenshot_path(logs_dir: Path, step: int) -> Path:
    return Path(logs_dir) / SCREENSHOT_DIR / f"step_{step:03d}.png"


def save_screenshot(logs_dir: Path, step: int, png: bytes) -> Path:
    """Write ``png`` to ``<logs_dir>/screenshots/step_NNN.png`` (creates the folder)."""
    png_size(png)
    path = screenshot_path(logs_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def downscale_png(png: bytes, max_width: int) -> bytes:
    """``png`` resized (aspect kept) so its width is at most ``max_width``; unchanged if smaller."""
    width, height = png_size(png)
    if width <= max_width:
        return png
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        small = img.resize((max_width, max(1, round(height * max_width / width))))
        out = io.BytesIO()
        small.save(out, format="PNG", optimize=False)
    return out.getvalue()
