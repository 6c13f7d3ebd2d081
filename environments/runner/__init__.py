"""The in-sandbox rollout runner (docs/CONTRACTS.md): start the task's services, run the
harness against the proxy, hand over to the verifier, report the outcome.
``python -m environments.runner --task-dir DIR --harness NAME ...``."""

from environments.runner.options import RunnerOptions, parse_options
from environments.runner.rollout import PHASE_PREFIX, report_line, run_rollout

__all__ = ["PHASE_PREFIX", "RunnerOptions", "parse_options", "report_line", "run_rollout"]
