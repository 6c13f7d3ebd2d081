"""Publishing run results to the Prefect UI: table and markdown artifacts, PNGs inline.

Artifacts are keyed (lower-case, dashes) so each flow's latest version shows on the
Artifacts page. Outside a flow run (plain function calls in tests) publishing is a no-op.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _in_flow_run() -> bool:
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def _table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _cell(v) for k, v in r.items()} for r in rows]


async def publish_table(key: str, rows: Sequence[dict[str, Any]], description: str) -> None:
    if not rows or not _in_flow_run():
        return
    from prefect.artifacts import acreate_table_artifact

    await acreate_table_artifact(key=key, table=_table(rows), description=description)


def publish_table_sync(key: str, rows: Sequence[dict[str, Any]], description: str) -> None:
    """:func:`publish_table` from a synchronous flow."""
    if not rows or not _in_flow_run():
        return
    from prefect.artifacts import create_table_artifact

    create_table_artifact(key=key, table=_table(rows), description=description)


async def publish_markdown(key: str, markdown: str, description: str) -> None:
    if not _in_flow_run():
        return
    from prefect.artifacts import acreate_markdown_artifact

    await acreate_markdown_artifact(key=key, markdown=markdown, description=description)


def png_markdown(path: str | Path | None, alt: str) -> str:
    """An inline (data URI) image plus the file path, so the UI shows the PNG itself."""
    if not path or not Path(path).is_file():
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})\n\n`{path}`\n"


def rows_markdown(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "_none_\n"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(_cell(r.get(c))) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict | list):
        return str(value)
    return value
