"""Bench: what the local engine's context extension (YaRN, 8k → 32k) costs the default model,
and how long a Claude-Code-sized prompt takes to prefill on this machine.

    .venv/bin/python bench/context.py                      # default model, CPU, ~10 min on 2 cores
    .venv/bin/python bench/context.py --long 8192 --prefill 9500 --repeats 1   # quicker

1. **Short, in-window text** (the harness prompts the model saw before the extension):
   ``--chunks`` chunks of ``--chunk`` tokens from the repository's Markdown docs. Per chunk:
   mean next-token NLL of the plain model and of the extended one, and how often their
   greedy next token agrees. Prints mean ± standard error over chunks (n = chunks).
2. **Long text**: the first ``--long`` tokens of one long document (the standard library's
   ``argparse.py``), NLL per 2,048-token bin for both models; past 8,192 the plain model
   extrapolates RoPE beyond its training window, the extended one interpolates.
3. **Prefill**: a ``--prefill``-token chat prompt through :class:`LocalEngine` (the serving
   path, ``max_tokens=1``), ``--repeats`` times with the prefix cache off (cold), then the
   same prompt plus a short new turn with it on (warm: what a harness's next call costs):
   seconds mean ± spread.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import sysconfig
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.engines.local import LocalEngine
from training.engines.local.context import DEFAULT_CONTEXT_LENGTH, extend_context
from training.engines.model_store import resolve_model

BIN = 2048
DOCS = ["README.md", "docs/*.md", "environments/*/README.md", "training/*/README.md", "storage/README.md"]


def load_models(source: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    from transformers import AutoConfig, AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    config = AutoConfig.from_pretrained(source)
    extend_context(config, DEFAULT_CONTEXT_LENGTH)
    extended = AutoModelForCausalLM.from_pretrained(source, config=config, dtype=torch.float32).eval()
    return plain, extended


@torch.inference_mode()
def token_nll(model: torch.nn.Module, ids: list[int], span: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position NLL of the next token and the greedy next token (lm head in slices: no full logits)."""
    x = torch.tensor([ids])
    hidden = model.model(input_ids=x).last_hidden_state[0, :-1]
    targets = x[0, 1:]
    nll, greedy = [], []
    for i in range(0, hidden.shape[0], span):
        logits = model.lm_head(hidden[i : i + span]).float()
        logp = torch.log_softmax(logits, dim=-1)
        nll.append(-logp.gather(1, targets[i : i + span, None])[:, 0])
        greedy.append(logits.argmax(dim=-1))
    return torch.cat(nll), torch.cat(greedy)


def mean_se(xs: list[float]) -> str:
    m = statistics.fmean(xs)
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return f"{m:.4f} ± {se:.4f}"


def doc_chunks(tokenizer: object, n: int, size: int) -> list[list[int]]:
    text = "\n\n".join(p.read_text(encoding="utf-8") for pattern in DOCS for p in sorted(ROOT.glob(pattern)))
    ids = tokenizer(text)["input_ids"]  # type: ignore[operator]
    chunks = [ids[i : i + size] for i in range(0, len(ids) - size + 1, size)][:n]
    if len(chunks) < n:
        raise SystemExit(f"only {len(chunks)} chunks of {size} tokens in the docs; ask for fewer")
    return chunks


def short_text(plain: torch.nn.Module, extended: torch.nn.Module, chunks: list[list[int]]) -> None:
    base, ext, diff, agree = [], [], [], []
    for ids in chunks:
        nb, gb = token_nll(plain, ids)
        ne, ge = token_nll(extended, ids)
        base.append(nb.mean().item())
        ext.append(ne.mean().item())
        diff.append(ext[-1] - base[-1])
        agree.append((gb == ge).float().mean().item())
    print(f"short text: n={len(chunks)} chunks x {len(chunks[0])} tokens (repository docs)")
    print(f"  NLL/token plain     {mean_se(base)}   (ppl {math.exp(statistics.fmean(base)):.2f})")
    print(f"  NLL/token extended  {mean_se(ext)}   (ppl {math.exp(statistics.fmean(ext)):.2f})")
    print(f"  extended - plain    {mean_se(diff)}   min {min(diff):+.4f} max {max(diff):+.4f}")
    print(f"  greedy next token agrees {mean_se(agree)}")


def long_text(plain: torch.nn.Module, extended: torch.nn.Module, ids: list[int]) -> None:
    print(f"long text: {len(ids)} tokens of argparse.py, NLL/token per {BIN}-token bin (mean ± SE over tokens)")
    rows = {}
    for name, model in (("plain", plain), ("extended", extended)):
        t0 = time.perf_counter()
        nll, _ = token_nll(model, ids)
        rows[name] = nll
        print(f"  {name}: forward {time.perf_counter() - t0:.0f}s", flush=True)
    print(f"  {'positions':>13} {'plain':>17} {'extended':>17}")
    for start in range(0, len(ids) - 1, BIN):
        cells = []
        for name in ("plain", "extended"):
            part = rows[name][start : start + BIN].tolist()
            cells.append(mean_se(part))
        print(f"  {start:>6}-{min(start + BIN, len(ids) - 1):<6} {cells[0]:>17} {cells[1]:>17}")


async def _timed(engine: LocalEngine, prompt: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = await engine.chat_completions({"messages": [{"role": "user", "content": prompt}], "max_tokens": 1,
                                         "temperature": 0})
    return time.perf_counter() - t0, out["usage"]["prompt_tokens"]


def _spread(seconds: list[float]) -> str:
    return f"{statistics.fmean(seconds):.1f}s mean, min {min(seconds):.1f} max {max(seconds):.1f}"


async def prefill(source: str, tokens: int, repeats: int, tokenizer: object) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = (stdlib / "argparse.py").read_text() + (stdlib / "inspect.py").read_text()
    ids = tokenizer(text)["input_ids"][: tokens - 16]  # type: ignore[operator]  # room for the chat template
    prompt = tokenizer.decode(ids)  # type: ignore[attr-defined]
    cold, warm, size = [], [], 0
    engine = LocalEngine(source, max_batch_size=1, prefix_cache_tokens=0)
    try:
        for _ in range(repeats):
            seconds, size = await _timed(engine, prompt)
            cold.append(seconds)
            print(f"  cold prefill {size} tokens: {seconds:.1f}s", flush=True)
    finally:
        await engine.aclose()
    engine = LocalEngine(source, max_batch_size=1, prefix_cache_tokens=tokens + 1024)
    try:
        await _timed(engine, prompt)
        for i in range(repeats):
            seconds, _ = await _timed(engine, prompt + f"\n\nTool result {i}: ok." * (i + 1))
            warm.append(seconds)
            print(f"  warm (head reused, {engine.stats.prefix_reused_tokens} tokens so far): {seconds:.1f}s", flush=True)
    finally:
        await engine.aclose()
    print(f"prefill: n={repeats} prompts of {size} tokens (context {engine.max_model_len}), threads "
          f"{torch.get_num_threads()}: cold {_spread(cold)}; warm {_spread(warm)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="HF folder (default: the default model)")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--long", type=int, default=16384, help="tokens of long text (0: skip)")
    ap.add_argument("--prefill", type=int, default=21660, help="prompt tokens to time (0: skip)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    source = resolve_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(source)
    plain, extended = load_models(source)
    t0 = time.perf_counter()
    short_text(plain, extended, doc_chunks(tokenizer, args.chunks, args.chunk))
    if args.long:
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        ids = tokenizer((stdlib / "argparse.py").read_text())["input_ids"][: args.long]
        long_text(plain, extended, ids)
    del plain, extended
    if args.prefill:
        asyncio.run(prefill(source, args.prefill, args.repeats, tokenizer))
    print(f"wall {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
