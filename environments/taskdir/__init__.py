"""Harbor-compatible task directories (DESIGN §3): load, validate, write, import."""

from environments.taskdir.model import (
    SCHEMA_VERSION,
    AgentSection,
    EnvironmentSection,
    TaskConfig,
    TaskMetadata,
    TaskSection,
    VerifierSection,
)
from environments.taskdir.io import (
    TaskDir,
    TaskDirError,
    content_sha,
    import_task,
    load_task,
    write_task,
)
from environments.taskdir.validate import Problem, validate_task

__all__ = [
    "SCHEMA_VERSION",
    "AgentSection",
    "EnvironmentSection",
    "Problem",
    "TaskConfig",
    "TaskDir",
    "TaskDirError",
    "TaskMetadata",
    "TaskSection",
    "VerifierSection",
    "content_sha",
    "import_task",
    "load_task",
    "validate_task",
    "write_task",
]
