"""Bench: greedy embedding dedup of N procedurally generated claw instructions.

Reports embedding and dedup seconds, kept counts, peak memory (process RSS and the dedup's
own tracemalloc peak), and checks that the blocked greedy dedup keeps exactly the same set
as the naive O(n²) reference on a subset.

``--embedder minilm`` (default) embeds with all-MiniLM-L6-v2 as prune does; ``--embedder
hash`` uses hashed word + character-trigram vectors (384-d), for machines where embedding
20,000 texts is impractical: the dedup's timing and exactness do not depend on the vectors.

    .venv/bin/python bench/dedup.py [--n 20000] [--subset 2000] [--tau 0.9] [--embedder minilm|hash] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthesis.dedup import Embedder, greedy_dedup, naive_dedup  # noqa: E402
from synthesis.procedural.families import FAMILIES, generate  # noqa: E402


def instructions(n: int) -> list[str]:
    fams = sorted(FAMILIES)
    return [generate(fams[i % len(fams)], i).instruction for i in range(n)]


def hash_embed(texts: list[str], dim: int = 384) -> np.ndarray:
    """Signed feature hashing of words and character trigrams, unit-normalized."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        low = " ".join(text.lower().split())
        feats = low.split() + [low[i : i + 3] for i in range(len(low) - 2)]
        for f in feats:
            h = zlib.crc32(f.encode())
            out[row, h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--subset", type=int, default=2_000)
    ap.add_argument("--tau", type=float, default=0.9)
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    texts = instructions(args.n)
    gen_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    emb = Embedder().encode(texts) if args.embedder == "minilm" else hash_embed(texts)
    embed_s = time.perf_counter() - t0

    tracemalloc.start()
    t0 = time.perf_counter()
    res = greedy_dedup(emb, args.tau)
    dedup_s = time.perf_counter() - t0
    _, dedup_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    sub = emb[: args.subset]
    t0 = time.perf_counter()
    naive = naive_dedup(sub, args.tau)
    naive_s = time.perf_counter() - t0
    fast_sub = greedy_dedup(sub, args.tau).kept

    doc = {
        "n": args.n, "tau": args.tau, "embedder": args.embedder, "generate_s": round(gen_s, 2), "embed_s": round(embed_s, 2),
        "embed_per_s": round(args.n / embed_s, 1), "dedup_s": round(dedup_s, 3), "kept": len(res.kept),
        "dropped": len(res.dropped), "dedup_peak_mb": round(dedup_peak / 2**20, 1),
        "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "subset": args.subset, "subset_kept": len(fast_sub), "naive_s": round(naive_s, 2),
        "same_kept_as_naive": fast_sub == naive,
    }
    if args.json:
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        for k, v in doc.items():
            sys.stdout.write(f"{k:>22}: {v}\n")
    return doc


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sys.exit(0 if main()["same_kept_as_naive"] else 1)
