"""A fake Kubernetes API server + simulated kubelet for tests (see server.py)."""

from tests.fakes.k8s.kubelet import (
    ExecResult,
    Executor,
    SimulatedKubelet,
    instant_success,
)
from tests.fakes.k8s.process import FakeKubeProcess
from tests.fakes.k8s.scheduler import Node
from tests.fakes.k8s.server import FakeKubeAPI

__all__ = ["ExecResult", "Executor", "FakeKubeAPI", "FakeKubeProcess", "Node", "SimulatedKubelet", "instant_success"]
