"""Images in model calls: stored once by content hash as side files, recorded by reference
(no base64 in the DB), passed through to engines that accept images, and replaced by a text
placeholder for text-only engines."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path

import openai
import pytest
from PIL import Image

from environments.gui.observation import image_part
from testkit.fakes.vllm import FakeVLLM
from training.engines.openai_compat import OpenAICompatEngine
from training.proxy.images import (
    PLACEHOLDER,
    BlobStore,
    ImageError,
    externalize_images,
    images_to_text,
    inline_images,
)
from training.proxy.server import ProxyServer


def _png(color: tuple[int, int, int], size: tuple[int, int] = (64, 36)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_externalize_all_three_apis_and_back(tmp_path: Path) -> None:
    red, blue = _png((255, 0, 0)), _png((0, 0, 255))
    body = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image_part(red)]},
        {"role": "user", "content": [image_part(red), {"type": "image_url", "image_url": "https://example.test/x.png"}]},
    ], "_client_request": {
        "input": [{"role": "user", "content": [{"type": "input_image", "image_url": f"data:image/png;base64,{_b64(blue)}"}]}],
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(blue)}}]}],
    }}
    store = BlobStore(tmp_path / "blobs")
    out, n = externalize_images(body, store)
    assert n == 4
    text = json.dumps(out)
    assert _b64(red)[:40] not in text and _b64(blue)[:40] not in text and "base64," not in text
    ref = out["messages"][0]["content"][1]
    sha = hashlib.sha256(red).hexdigest()
    assert ref == {"type": "image_ref", "sha256": sha, "path": f"sha256/{sha[:2]}/{sha}.png", "mime": "image/png",
                   "bytes": len(red), "source_type": "image_url"}
    assert (tmp_path / "blobs" / ref["path"]).read_bytes() == red
    assert len(list((tmp_path / "blobs").rglob("*.png"))) == 2  # one file per distinct image
    assert out["messages"][1]["content"][1]["image_url"] == "https://example.test/x.png"  # remote URLs untouched
    assert inline_images(out, store) == body  # lossless round trip
    assert body["messages"][0]["content"][1]["type"] == "image_url"  # the input is not modified


def test_bad_base64_is_a_one_line_error(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}]}]}
    with pytest.raises(ImageError, match="invalid base64"):
        externalize_images(body, BlobStore(tmp_path))


def test_images_to_text_replaces_only_images() -> None:
    chat = {"model": "m", "messages": [{"role": "system", "content": "s"},
                                       {"role": "user", "content": [{"type": "text", "text": "hi"}, image_part(_png((1, 2, 3)))]}]}
    out = images_to_text(chat)
    assert out["messages"][0] == chat["messages"][0]
    assert out["messages"][1]["content"] == [{"type": "text", "text": "hi"}, {"type": "text", "text": PLACEHOLDER}]
    assert chat["messages"][1]["content"][1]["type"] == "image_url"


class _TextOnly(OpenAICompatEngine):
    accepts_images = False


@pytest.mark.parametrize("text_only", [False, True])
async def test_proxy_records_images_by_reference(text_only: bool, sqlite_url: str, tmp_path: Path) -> None:
    png = _png((10, 200, 30), (320, 180))
    with FakeVLLM() as fake:
        engine = (_TextOnly if text_only else OpenAICompatEngine)(fake.base_url, timeout=5.0)
        async with ProxyServer(engine, db_url=sqlite_url, blobs_dir=tmp_path / "blobs") as server, \
                server.client() as admin:
            reg = await admin.register(task_id="t", harness="computer-use")
            oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0)
            await oa.chat.completions.create(model="fake-policy", messages=[
                {"role": "user", "content": [{"type": "text", "text": "what is on screen?"}, image_part(png)]}])
            calls = await admin.calls(reg.rollout_id)
        sent = fake.requests[-1]["messages"][0]["content"]
    assert len(calls) == 1 and calls[0]["status"] == "ok"
    recorded = json.dumps(calls[0]["request"])
    assert _b64(png)[:64] not in recorded and "base64" not in recorded
    ref = calls[0]["request"]["messages"][0]["content"][1]
    assert ref["type"] == "image_ref" and ref["sha256"] == hashlib.sha256(png).hexdigest()
    assert (tmp_path / "blobs" / ref["path"]).read_bytes() == png
    if text_only:
        assert sent[1] == {"type": "text", "text": PLACEHOLDER}
    else:
        assert sent[1]["type"] == "image_url" and sent[1]["image_url"]["url"].endswith(_b64(png)[-40:])
    # the row in the DB itself holds no base64 either
    import sqlalchemy as sa

    eng = sa.create_engine(sqlite_url)
    with eng.connect() as conn:
        raw = conn.execute(sa.text("select request from model_calls")).scalar_one()
    eng.dispose()
    assert "base64" not in str(raw) and ref["sha256"] in str(raw)
