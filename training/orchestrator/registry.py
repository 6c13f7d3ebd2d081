"""Image references and the registry HTTP API v2: does ``<registry>/<repo>:<tag>`` exist?

Used by the kubernetes backend to skip pushing an image a registry already holds and to
check a content-hash tag before pods try to pull it. Plain HTTP for loopback registries
(what Docker itself treats as insecure by default), HTTPS elsewhere; anonymous, basic, or
bearer-token auth (the ``WWW-Authenticate: Bearer realm=...`` challenge of Docker Hub,
GHCR and the CNCF distribution server).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

#: Manifest media types a registry may hold for a tag (HEAD must accept them all, else
#: some registries answer 404 for an OCI index they would serve).
MANIFEST_TYPES = ("application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
                  "application/vnd.docker.distribution.manifest.list.v2+json, "
                  "application/vnd.docker.distribution.manifest.v2+json")


class RegistryError(RuntimeError):
    """The registry could not answer; the message names the registry and what it said."""


@dataclass(frozen=True)
class ImageRef:
    registry: str  # host[:port]
    repository: str
    reference: str  # a tag, or a digest "sha256:..."

    def __str__(self) -> str:
        sep = "@" if self.reference.startswith("sha256:") else ":"
        return f"{self.registry}/{self.repository}{sep}{self.reference}"


def parse_ref(ref: str) -> ImageRef:
    """``host[:port]/repo[/more]:tag`` or ``...@sha256:...``; the first path part must name the
    registry (contain a ``.`` or ``:``, or be ``localhost``), as a pull from it would."""
    name, digest = (ref.split("@", 1) + [""])[:2]
    host, _, rest = name.partition("/")
    if not rest or not ("." in host or ":" in host or host == "localhost"):
        raise ValueError(f"image reference {ref!r} does not name a registry (expected host[:port]/repo:tag)")
    if digest:
        return ImageRef(host, rest, digest)
    repo, sep, tag = rest.rpartition(":")
    if not sep or "/" in tag:
        repo, tag = rest, "latest"
    return ImageRef(host, repo, tag)


def _scheme(registry: str) -> str:
    host = registry.rsplit(":", 1)[0] if not registry.startswith("[") else registry.split("]")[0] + "]"
    loopback = host in ("localhost", "[::1]") or re.match(r"^127\.\d+\.\d+\.\d+$", host) is not None
    return "http" if loopback else "https"


def _bearer_token(client: httpx.Client, challenge: str, auth: tuple[str, str] | None) -> str | None:
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", None)
    if not realm:
        return None
    resp = client.get(realm, params=params, auth=auth)
    if resp.status_code != 200:
        raise RegistryError(f"token endpoint {realm}: HTTP {resp.status_code}")
    body = resp.json()
    return body.get("token") or body.get("access_token")


def registry_has_image(ref: str, *, auth: tuple[str, str] | None = None, timeout: float = 10.0,
                       scheme: str | None = None) -> bool:
    """True when the registry holds a manifest for ``ref``; False on 404. Blocking (use
    ``asyncio.to_thread`` from async code). Raises RegistryError on any other answer."""
    image = parse_ref(ref)
    url = f"{scheme or _scheme(image.registry)}://{image.registry}/v2/{image.repository}/manifests/{image.reference}"
    headers = {"Accept": MANIFEST_TYPES}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            resp = client.head(url, headers=headers, auth=auth)
            challenge = resp.headers.get("www-authenticate", "")
            if resp.status_code == 401 and challenge.lower().startswith("bearer"):
                token = _bearer_token(client, challenge[len("bearer"):].strip(), auth)
                if token:
                    resp = client.head(url, headers={**headers, "Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        raise RegistryError(f"registry {image.registry}: {type(exc).__name__}: {exc}") from exc
    if resp.status_code == 200:
        return True
    if resp.status_code == 404:
        return False
    raise RegistryError(f"registry {image.registry}: HTTP {resp.status_code} for HEAD {url}")
