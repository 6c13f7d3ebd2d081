"""A fake Kubernetes API server + simulated kubelet for tests and benchmarks (see server.py)."""

from testkit.fakes.kubernetes.kubelet import (
    ExecResult,
    Executor,
    SimulatedKubelet,
    instant_success,
)
from testkit.fakes.kubernetes.process import FakeKubeProcess
from testkit.fakes.kubernetes.scheduler import Node
from testkit.fakes.kubernetes.server import FakeKubeAPI

__all__ = ["ExecResult", "Executor", "FakeKubeAPI", "FakeKubeProcess", "Node", "SimulatedKubelet", "instant_success"]
