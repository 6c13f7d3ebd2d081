"""What every route of one proxy app shares: the engine, the recorder and the app's limits."""

from __future__ import annotations

from dataclasses import dataclass

from training.engines.base import ChatEngine
from training.proxy.images import BlobStore
from training.proxy.recorder import Recorder


@dataclass(frozen=True, slots=True)
class ProxyContext:
    """One proxy app's settings and services, built once by ``create_app``.

    ``allowed``: the model names served (None: any name); ``engine_sees_images``: False gives
    the engine a text placeholder per inline image; ``public_url``: the address sandboxes
    reach the proxy at (None: the address the admin call came in on)."""

    engine: ChatEngine
    recorder: Recorder
    admin_key: str
    max_body_bytes: int
    allowed: frozenset[str] | None
    blobs: BlobStore
    engine_sees_images: bool
    public_url: str | None
