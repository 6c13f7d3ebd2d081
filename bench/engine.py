"""Bench: aggregate tokens/s of the local engine at 1, 4 and 8 concurrent requests versus
plain sequential Hugging Face ``generate`` on the same model, in one run.

    .venv/bin/python bench/engine.py                 # default model (SmolLM2-135M), CPU
    .venv/bin/python bench/engine.py --device cuda   # one GPU
    .venv/bin/python bench/engine.py --model DIR --max-tokens 64 --concurrency 1 4 8 16
    # an agent's decode: ~450-token contexts (a shared system prompt), sampled at T = 0.8
    .venv/bin/python bench/engine.py --context-tokens 450 --temperature 0.8 --concurrency 16 32

Every request generates exactly ``--max-tokens`` tokens (``ignore_eos`` for the engine,
``min_new_tokens`` for ``generate``), greedy (``--temperature``: the engine rows sample), so the token
counts compare like for like.
Prints a table (and ``--json`` writes the rows to a file). Default run: a few minutes at
most on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.engines.local import LocalEngine
from training.engines.model_store import resolve_model

PROMPTS = [
    "Write one sentence about the sea.",
    "Name three prime numbers and explain why they are prime.",
    "What is the capital of France? Answer briefly.",
    "Give me a short tip for writing clean Python code.",
    "Describe a cat in a few words.",
    "How do I list files in a directory with bash?",
    "Translate 'good morning' into Spanish and French.",
    "Summarise the rules of tic-tac-toe.",
]


#: a harness's system prompt stand-in: shared by every request (the prefix cache serves it once)
_FILLER = "You are an agent with tools. Think step by step, call a tool when it helps, answer briefly. "
CONTEXT_TOKENS = 0  # --context-tokens: about this many prompt tokens per request


def _messages(i: int) -> list[dict[str, str]]:
    user = {"role": "user", "content": f"Request {i}: {PROMPTS[i % len(PROMPTS)]}"}
    if not CONTEXT_TOKENS:
        return [user]
    return [{"role": "system", "content": _FILLER * max(1, CONTEXT_TOKENS // 20)}, user]


def bench_generate(engine: LocalEngine, n_requests: int, max_tokens: int) -> dict[str, float]:
    """Plain ``model.generate``, one request after another (no batching)."""
    model, tokenizer = engine.model, engine.tokenizer
    tokens, started = 0, time.perf_counter()
    for i in range(n_requests):
        text = tokenizer.apply_chat_template(_messages(i), tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"].to(engine.device)
        with engine._batcher.weights_lock, torch.inference_mode():  # the engine's worker is idle meanwhile
            out = model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens, min_new_tokens=max_tokens,
                do_sample=False, pad_token_id=tokenizer.pad_token_id,
            )
        tokens += out.shape[1] - ids.shape[1]
    seconds = time.perf_counter() - started
    return {"requests": n_requests, "tokens": tokens, "seconds": seconds}


async def bench_engine(engine: LocalEngine, concurrency: int, max_tokens: int, temperature: float = 0.0
                       ) -> dict[str, float]:
    """``concurrency`` requests sent at once; the engine batches them."""
    steps_before, decode_before = engine.stats.decode_steps, engine.stats.decode_seconds
    started = time.perf_counter()
    responses = await asyncio.gather(
        *(
            engine.chat_completions(
                {"messages": _messages(i), "max_tokens": max_tokens, "temperature": temperature, "ignore_eos": True}
            )
            for i in range(concurrency)
        )
    )
    seconds = time.perf_counter() - started
    tokens = sum(r["usage"]["completion_tokens"] for r in responses)
    steps = engine.stats.decode_steps - steps_before
    return {"requests": concurrency, "tokens": tokens, "seconds": seconds, "decode_steps": steps,
            "ms_per_decode_step": round(1000 * (engine.stats.decode_seconds - decode_before) / max(steps, 1), 1)}


async def run(args: argparse.Namespace) -> list[dict[str, object]]:
    started = time.perf_counter()
    engine = LocalEngine(resolve_model(args.model), device=args.device, max_batch_size=max(args.concurrency))
    load_s = time.perf_counter() - started
    print(f"model {engine.model_name} on {args.device} ({engine.dtype}), loaded in {load_s:.1f}s; torch threads "
          f"{torch.get_num_threads()}; {args.max_tokens} tokens per request, ~{CONTEXT_TOKENS} prompt tokens, "
          f"T = {args.temperature}")
    try:
        await engine.chat_completions({"messages": _messages(0), "max_tokens": 2})  # warm-up
        rows: list[dict[str, object]] = []
        base = bench_generate(engine, args.sequential_requests, args.max_tokens)
        rows.append({"mode": "HF generate, sequential", "concurrency": 1, **base})
        for concurrency in args.concurrency:
            result = await bench_engine(engine, concurrency, args.max_tokens, args.temperature)
            rows.append({"mode": "local engine", "concurrency": concurrency, **result})
    finally:
        await engine.aclose()
    base_rate = rows[0]["tokens"] / rows[0]["seconds"]  # type: ignore[operator]
    print(f"\n{'mode':<27}{'concurrent':>11}{'requests':>10}{'tokens':>8}{'seconds':>9}{'tok/s':>8}"
          f"{'ms/step':>9}{'vs generate':>13}")
    for row in rows:
        rate = row["tokens"] / row["seconds"]  # type: ignore[operator]
        row["tokens_per_s"] = round(rate, 2)
        row["speedup"] = round(rate / base_rate, 2)
        print(f"{row['mode']:<27}{row['concurrency']:>11}{row['requests']:>10}{row['tokens']:>8}"
              f"{row['seconds']:>9.2f}{rate:>8.1f}{row.get('ms_per_decode_step', '-'):>9}{rate / base_rate:>12.2f}x")
    print(f"\ntotal wall time {time.perf_counter() - started:.1f}s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="HF model folder or hub id (default: the offline SmolLM2)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--sequential-requests", type=int, default=4, help="requests for the generate baseline")
    parser.add_argument("--context-tokens", type=int, default=0,
                        help="a shared system prompt of about this many tokens before each request (0: none)")
    parser.add_argument("--temperature", type=float, default=0.0, help="engine rows: 0 greedy, else sampled")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    args = parser.parse_args()
    global CONTEXT_TOKENS
    CONTEXT_TOKENS = args.context_tokens
    logging.basicConfig(level=logging.WARNING)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    rows = asyncio.run(run(args))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": args.device, "max_tokens": args.max_tokens, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
