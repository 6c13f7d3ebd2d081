"""``image_source="build"`` for real: the docker backend's builder builds a task image, it is
pushed to Debian's docker-registry on loopback (scripts/start-registry.sh, a real Docker
engine from scripts/start-dockerd.sh), and the fake cluster's kubelet pulls only what that
registry holds (``registry_has_image`` over its HTTP API v2). A pushed image runs; an image
nobody pushed is ``ErrImagePull`` → ``infra_error/image_pull``. Skipped, with the reason
printed, when the registry, the engine or the base image is missing. Without Docker: an image
the registry already has is used as is (nothing built or pushed)."""

from __future__ import annotations

import contextlib
import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest

from environments.records import Outcome, RolloutSpec
from testkit.tasks import make_task
from tests.training.orchestrator.conftest import (
    REGISTRY,
    docker_client_with_base_image,
    registry_reason,
    skip_because,
)
from training.orchestrator.images import content_tag, remote_ref
from training.orchestrator.kubernetes.images import BuiltImages, ContentImages
from training.orchestrator.registry import registry_has_image
from training.orchestrator.scheduler import Scheduler, new_rollout_id

WHAT = "kubernetes build-source test"


@pytest.fixture
def registry() -> str:
    reason = registry_reason()
    if reason:
        skip_because(WHAT, reason)
    return REGISTRY


@pytest.fixture
def docker_client() -> Iterator[Any]:
    yield from docker_client_with_base_image(WHAT, timeout=120)


def placeholder_image(client: Any, ref: str) -> None:
    """A one-file image (``docker import``) pushed as ``ref``: the fake kubelet's executor
    takes the runtime from this host, but the pull of the runtime initContainer's image
    still has to succeed against the registry."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("README")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"rt\n"))
    repo, _, version = ref.rpartition(":")
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=version)
    for line in client.api.push(repo, tag=version, stream=True, decode=True):
        assert not line.get("error"), line


def fresh_task(root: Path, name: str) -> Path:
    """A tiny task whose environment content (so its tag) no earlier run has pushed."""
    return make_task(root, name, extra={"environment/nonce.txt": uuid.uuid4().hex + "\n"})


def spec(task: Path, harness: str) -> RolloutSpec:
    return RolloutSpec(rollout_id=new_rollout_id(), task_dir=str(task), harness=harness, timeout_sec=120)


@pytest.mark.docker
@pytest.mark.slow
async def test_build_push_pull_and_unpushed_image(cluster, k8s_backend, tmp_path: Path, registry: str,
                                                  docker_client: Any) -> None:
    runtime = f"{registry}/openforge-runtime:test-{uuid.uuid4().hex[:10]}"
    placeholder_image(docker_client, runtime)
    cluster.api.call(lambda _s, k: setattr(k, "pullable", lambda image: registry_has_image(image, timeout=5)))
    pushed_task = fresh_task(tmp_path / "bank", "pushed")
    ref = remote_ref(content_tag(pushed_task), registry)
    cluster.executor.images[ref] = pushed_task
    assert registry_has_image(ref) is False
    images = BuiltImages(registry, docker_client=docker_client)
    made: list[str] = [runtime]
    try:
        backend = k8s_backend(registry=registry, image_source="build", images=images, runtime_image=runtime)
        r = await Scheduler(backend).run_one(spec(pushed_task, "oracle"))
        assert (r.status, r.reward, r.error_kind) == (Outcome.ok, 1.0, None), r
        made.append(ref)
        assert registry_has_image(ref) is True
        assert images.stats == {"present": 0, "built": 1, "pushed": 1}
        # `content` names the same image; a second `build` source finds it and does nothing
        assert ContentImages(registry).resolve_now(pushed_task).ref == ref
        again = BuiltImages(registry, docker_client=docker_client)
        r2 = await Scheduler(k8s_backend(registry=registry, image_source="build", images=again,
                                         runtime_image=runtime)).run_one(spec(pushed_task, "noop"))
        assert (r2.status, r2.reward) == (Outcome.ok, 0.0), r2
        assert again.stats == {"present": 1, "built": 0, "pushed": 0}

        # an image nobody pushed: the kubelet's pull fails against the registry
        unpushed = fresh_task(tmp_path / "bank", "unpushed")
        missing = remote_ref(content_tag(unpushed), registry)
        cluster.executor.images[missing] = unpushed  # it would run, were it pullable
        content = k8s_backend(registry=registry, image_source="content", images=ContentImages(registry),
                              runtime_image=runtime)
        r3 = await Scheduler(content).run_one(spec(unpushed, "oracle"))
        assert (r3.status, r3.error_kind) == (Outcome.infra_error, "image_pull"), r3
        assert missing in r3.error and ("ErrImagePull" in r3.error or "ImagePullBackOff" in r3.error), r3.error
        assert registry_has_image(missing) is False
    finally:
        from docker.errors import ImageNotFound

        for name in made:  # the remote names and the local build-cache tag of the same image
            with contextlib.suppress(ImageNotFound):
                for tag in docker_client.images.get(name).tags:
                    with contextlib.suppress(ImageNotFound):
                        docker_client.images.remove(tag, force=True)


class _Registry:
    """A registry stub on loopback holding exactly the manifests named in ``known``."""

    def __init__(self, known: set[str]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from threading import Thread

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200 if self.path in known else 404)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class _NoDocker:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"docker used ({name}) although the registry has the image")


async def test_an_image_the_registry_has_is_neither_built_nor_pushed(tmp_path: Path) -> None:
    from environments.taskdir import load_task
    from training.orchestrator.backend import SandboxError

    task = make_task(tmp_path / "bank", "t", dockerfile="FROM debian:bookworm-slim\nWORKDIR /srv/work\n")
    repo, _, version = content_tag(task).partition(":")
    with _Registry({f"/v2/{repo}/manifests/{version}"}) as reg:
        images = BuiltImages(reg.host, docker_client=_NoDocker())
        got = await images.resolve(load_task(task))
        assert got.ref == f"{reg.host}/{content_tag(task)}" == ContentImages(reg.host).resolve_now(task).ref
        assert got.workdir == "/srv/work" and images.stats == {"present": 1, "built": 0, "pushed": 0}
    with pytest.raises(SandboxError, match=r"127\.0\.0\.1:9/openforge-task:.*registry 127\.0\.0\.1:9") as err:
        await BuiltImages("127.0.0.1:9", docker_client=_NoDocker()).resolve(load_task(task))
    assert err.value.kind.value == "build_failed"
