"""The ``kubernetes`` sandbox backend: one Pod per rollout on a real cluster (DESIGN §5).

How a rollout reaches a pod
---------------------------
- **Image**: the task's environment image, always named
  ``<OPENFORGE_K8S_REGISTRY>/openforge-task:<sha20>`` — the content hash of
  ``environment/`` as written (:func:`training.orchestrator.images.content_tag`). With
  ``image_source="build"`` the docker backend's builder builds and pushes it when the registry
  lacks that tag; with ``"content"`` it was pushed beforehand. Files the Dockerfile COPYs are
  therefore baked into it.
- **Runtime** (the runner, our packages and their Python deps): a separate
  ``runtime_image`` holding a self-contained tree at ``/opt/openforge`` (``python/`` — a
  relocatable CPython with our dependencies installed, ``repo/`` — this checkout,
  ``tools/`` — harness CLIs; built by ``scripts/build-runtime-image.sh``). An initContainer
  copies it into an emptyDir that the sandbox container mounts read-only at
  ``/opt/openforge``, so task images need no OpenForge install (any glibc image with ``sh``,
  ``cp`` and the libraries the interpreter links, e.g. Debian bookworm's, works). A second initContainer, running the task
  image, copies its WORKDIR into an emptyDir: the workspace is writable while the root
  filesystem stays read-only.
- **Task files**: the sandbox container runs ``pod_entry.py`` (stdlib only), which
  long-polls the backend's *control endpoint* with the pod's secret key for its
  assignment: the runner's argv and env, the task's visible files (tar of the task dir
  without ``tests/`` and ``solution/``, unpacked at ``/task``) and, for the oracle only, the
  solution (``/solution``).
- **Tests only after the agent**: when the runner prints ``OPENFORGE_PHASE agent_done``,
  ``pod_entry`` asks the control endpoint (``POST /v1/agent-done``) and unpacks the tar it
  gets into ``/tests`` (``test.sh`` last, atomically); before that line the pod holds no
  copy of them. The runner then runs the verifier as everywhere else.
- **Result**: the runner posts its report to the proxy's finish endpoint; after the pod
  ends the backend reads that record (with a ``proxy`` client) and, as a fallback and for
  ``runner.log``, the container log's ``OPENFORGE_RESULT`` line. ``pod_entry`` sends a tar of
  ``/logs`` back before it exits (kept under ``rollouts/<id>/logs`` like other backends).

Pods and policy
---------------
Labels ``openforge.dev/{instance,run,rollout,task,pool,image}``; an ownerReference to the
run's owner ConfigMap (deleting it garbage-collects everything of a run); restricted
security context (non-root uid, no privilege escalation, read-only root, ALL capabilities
dropped, RuntimeDefault seccomp, no service-account token); requests = limits from
task.toml; ``activeDeadlineSeconds`` = the rollout timeout; ``restartPolicy: Never``; the
pod key and rollout token in a per-pod Secret. One NetworkPolicy per run denies ingress and
allows egress only to the proxy and the control endpoint (plus DNS when one of them is a
host name).

Lifecycle: one watch on the run's pods with a full list every ``resync_seconds``; creation
through a token bucket (``create_qps``) under a cap (``max_pods``); outcomes classified by
:mod:`.outcome`; pods deleted when done; objects of earlier runs of the same ``instance``
removed at start. Warm pools (:mod:`.warm`, ``warm_pool=K``): K pods per image parked on
the control endpoint; a rollout claims one by answering its poll.

Limits: a same-uid agent can still write to the runner's stdout through ``/proc`` (as in
the local backend); the control endpoint must be reachable from pods (``control_url``).
"""

from training.orchestrator.kubernetes.backend import (
    KubernetesBackend,
    PodDeadlineExceeded,
)
from training.orchestrator.kubernetes.config import KubeSettings

__all__ = ["KubeSettings", "KubernetesBackend", "PodDeadlineExceeded"]
