"""The task bank → veRL's RL dataset (Parquet) and the worker's task index (JSON).

One row per task: ``prompt`` (the chat veRL's dataloader hands the agent loop as
``raw_prompt``: the task's instruction as one user turn; the harness builds its own prompt
from the task directory), ``data_source`` (``openforge/<domain>``), ``agent_name``
(``openforge``: the agent loop every row runs), ``extra_info`` (``task_id`` — what the agent
loop rolls out —, ``index``), and ``reward_model`` (empty: the verifier's reward comes back
with the rollout). ``tasks.json`` maps task id → task directory for the rollout function.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from environments.taskdir import TaskDir
from training.trainers.verl.config import AGENT_LOOP_NAME


def dataset_rows(tasks: Sequence[TaskDir]) -> list[dict]:
    rows = []
    for index, task in enumerate(tasks):
        domain = task.config.openforge.domain or "task"
        rows.append({
            "prompt": [{"role": "user", "content": task.instruction}],
            "data_source": f"openforge/{domain}",
            "agent_name": AGENT_LOOP_NAME,
            "extra_info": {"task_id": task.id, "index": index},
            "reward_model": {"style": "openforge-verifier", "ground_truth": ""},
        })
    return rows


def write_dataset(tasks: Sequence[TaskDir], parquet: str | Path, index_json: str | Path) -> tuple[Path, Path]:
    """Write ``parquet`` (the rows above) and ``index_json`` (``{task_id: task_dir}``)."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    if not tasks:
        raise ValueError("veRL dataset: no tasks")
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"veRL dataset: duplicate task ids {sorted({i for i in ids if ids.count(i) > 1})}")
    parquet, index_json = Path(parquet), Path(index_json)
    parquet.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(dataset_rows(tasks)), parquet)
    index_json.write_text(json.dumps({t.id: str(Path(t.path).resolve()) for t in tasks}, indent=1))
    return parquet, index_json
