"""SFT on distilled trajectories: token ids + loss masks (Parquet) → an HF checkpoint."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from openforge.presets import Preset
from openforge.settings import get_settings
from storage.db import make_engine
from training.trajectory.sft import read_sft_parquet
from training.workflows.plots import curves_png


class SFTReport(BaseModel):
    run_id: str
    examples: int
    updates: int
    #: Examples trained on at least once, and examples dropped as longer than sft.max_length.
    examples_trained: int = 0
    overlong_dropped: int = 0
    losses: list[float]
    checkpoint: str
    curve_png: str | None
    seconds: float


def sft_train(
    preset: Preset,
    data: str | Path,
    *,
    model_path: str | Path | None = None,
    run_id: str | None = None,
    out_dir: str | Path | None = None,
    on_update: Callable[[int, dict[str, float]], None] | None = None,
) -> SFTReport:
    """``sft.epochs`` passes over the examples in batches of ``sft.batch_size``."""
    from training.engines.model_store import resolve_model  # noqa: PLC0415
    from training.trainers.local import LocalTrainer  # noqa: PLC0415
    from training.trainers.local.trainer import sft_train_config  # noqa: PLC0415

    t0 = time.perf_counter()
    run_id = run_id or f"sft-{int(time.time())}"
    out = Path(out_dir) if out_dir else get_settings().runs_dir / run_id
    examples = read_sft_parquet(data)
    if not examples:
        raise ValueError(f"{data}: no SFT examples (did distillation keep any successful trajectory?)")
    db = make_engine(get_settings().db_url)
    try:
        trainer = LocalTrainer.from_pretrained(resolve_model(str(model_path) if model_path else None),
                                               sft_train_config(preset), device=preset.engine.device,
                                               db_engine=db, run_id=run_id,
                                               context_length=preset.engine.context_length)
        rng = random.Random(preset.train.seed)
        losses: list[float] = []
        updates = trained = overlong = 0
        for epoch in range(preset.sft.epochs):
            order = list(examples)
            rng.shuffle(order)
            for i in range(0, len(order), preset.sft.batch_size):
                metrics = trainer.sft_step(order[i : i + preset.sft.batch_size])
                if epoch == 0:
                    trained += int(metrics.get("examples", 0))
                    overlong += int(metrics.get("overlong_dropped", 0))
                if metrics.get("updated"):
                    updates += 1
                    losses.append(metrics.get("loss", 0.0))
                    if on_update is not None:
                        on_update(updates, metrics)
        if not updates:
            raise ValueError(f"{data}: SFT made 0 updates: all {len(examples)} examples are longer than "
                             f"sft.max_length = {preset.sft.max_length} tokens ({overlong} dropped) or learn nothing")
        checkpoint = trainer.save_checkpoint(out / "checkpoint")
        trainer.finish("completed", {"examples": len(examples), "final_loss": losses[-1] if losses else None})
    finally:
        db.dispose()
    png = curves_png({"sft_loss": list(enumerate(losses, 1))}, out / "sft_loss.png", title="SFT", xlabel="update")
    return SFTReport(run_id=run_id, examples=len(examples), updates=updates, examples_trained=trained,
                     overlong_dropped=overlong, losses=losses,
                     checkpoint=str(checkpoint), curve_png=str(png), seconds=time.perf_counter() - t0)
