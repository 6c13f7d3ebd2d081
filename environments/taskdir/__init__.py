"""Harbor-compatible task directories (DESIGN §3): load, validate, write, import."""

from environments.taskdir.io import (
    TaskDir,
    TaskDirError,
    content_sha,
    import_task,
    load_task,
    write_task,
)
from environments.taskdir.model import (
    SCHEMA_VERSION,
    AgentSection,
    EnvironmentSection,
    HealthcheckSection,
    OpenForgeMeta,
    SolutionSection,
    StepSection,
    TaskConfig,
    TaskMetadata,
    TaskSection,
    VerifierSection,
    harbor_name,
    openforge_keys,
)
from environments.taskdir.validate import Problem, validate_task

__all__ = [
    "SCHEMA_VERSION",
    "AgentSection",
    "EnvironmentSection",
    "HealthcheckSection",
    "OpenForgeMeta",
    "Problem",
    "SolutionSection",
    "StepSection",
    "TaskConfig",
    "TaskDir",
    "TaskDirError",
    "TaskMetadata",
    "TaskSection",
    "VerifierSection",
    "content_sha",
    "harbor_name",
    "import_task",
    "load_task",
    "openforge_keys",
    "validate_task",
    "write_task",
]
