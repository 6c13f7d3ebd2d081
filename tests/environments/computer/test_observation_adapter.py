"""Shared GUI observation helpers (environments/gui/observation.py) and the computer-use
adapter's launch plan."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from environments.gui.observation import (
    NotAPng,
    downscale_png,
    image_part,
    png_size,
    save_screenshot,
)
from environments.harnesses import HarnessContext, get_harness
from environments.harnesses.adapters.builtin import OracleHarness


def _png(w: int, h: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), (9, 9, 9)).save(out, format="PNG")
    return out.getvalue()


def test_image_part_and_png_size() -> None:
    png = _png(30, 20)
    part = image_part(png)
    assert part["type"] == "image_url"
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == png
    assert image_part(png, detail="low")["image_url"]["detail"] == "low"
    assert png_size(png) == (30, 20)
    with pytest.raises(NotAPng):
        image_part(b"GIF89a not a png")


def test_save_screenshot_and_downscale(tmp_path: Path) -> None:
    path = save_screenshot(tmp_path, 7, _png(40, 20))
    assert path == tmp_path / "screenshots" / "step_007.png" and png_size(path.read_bytes()) == (40, 20)
    assert png_size(downscale_png(_png(1920, 1080), 1280)) == (1280, 720)
    small = _png(100, 50)
    assert downscale_png(small, 1280) is small


def test_computer_use_adapter_plan(tmp_path: Path) -> None:
    ctx = HarnessContext(instruction="do it", task_dir=tmp_path / "task", workspace=tmp_path / "ws",
                         logs_dir=tmp_path / "logs" / "agent", home=tmp_path / "home",
                         base_url="http://proxy/rollouts/tok/v1", token="tok", model="m",
                         options={"max_steps": 5, "image_width": 1280, "temperature": 0.7})
    plan = get_harness("computer-use").plan(ctx)
    argv = plan.argv
    assert argv[1:3] == ["-m", "environments.harnesses.computer_use"]
    assert argv[argv.index("--task-dir") + 1] == str(tmp_path / "task")
    assert argv[argv.index("--max-steps") + 1] == "5" and argv[argv.index("--image-width") + 1] == "1280"
    assert argv[argv.index("--temperature") + 1] == "0.7"
    assert plan.env["OPENAI_API_KEY"] == "tok"  # the rollout token is the only credential
    assert OracleHarness().env(ctx)["OPENFORGE_PYTHON"]  # computer-use oracles replay with this interpreter
