"""The local engine's in-place KV cache: same attention results as transformers' growing-by-
concatenation cache, and appends that do not copy the cache."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache

from testkit.models import build_tiny_model
from training.engines.local.kv_cache import MIN_HEADROOM, GrowingLayer, growing_cache


def _decode(model, cache, steps: int = 12):  # noqa: ANN001
    torch.manual_seed(1)
    ids = torch.randint(3, 60, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[0, :4] = 0  # a left-padded row, as the batcher builds them
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    logits = []
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
        token, pos = out.logits[:, -1:].argmax(-1), positions[:, -1] + 1
        logits.append(out.logits[:, -1])
        for step in range(steps):
            if step == 5:  # a row leaves the batch mid-decode
                cache.batch_select_indices(torch.tensor([0, 2]))
                token, pos, mask = token[[0, 2]], pos[[0, 2]], mask[[0, 2]]
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], 1)
            out = model(input_ids=token, attention_mask=mask, position_ids=pos[:, None], past_key_values=cache,
                        use_cache=True)
            token, pos = out.logits[:, -1:].argmax(-1), pos + 1
            logits.append(out.logits[:, -1])
    return logits


def test_in_place_cache_gives_the_concatenating_caches_logits_through_joins_and_leaves():
    model = build_tiny_model(64).eval()
    reference = _decode(model, DynamicCache(config=model.config))
    ours = _decode(model, growing_cache(model.config))
    assert len(reference) == len(ours)
    for a, b in zip(reference, ours, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_appends_write_into_the_same_buffer_until_it_is_full_or_replaced():
    layer = GrowingLayer()
    k = torch.randn(2, 1, 5, 4)
    layer.update(k, k.clone())
    start = layer.keys.data_ptr()
    for _ in range(MIN_HEADROOM):  # the headroom after a 5-token prefill
        step = torch.randn(2, 1, 1, 4)
        keys, _ = layer.update(step, step.clone())
        assert keys.data_ptr() == start, "an append within capacity copied the cache"
        torch.testing.assert_close(keys[..., -1:, :], step)
    torch.testing.assert_close(layer.keys[..., :5, :], k)
    step = torch.randn(2, 1, 1, 4)
    layer.update(step, step)  # capacity exhausted: one reallocation, content kept
    assert layer.keys.data_ptr() != start and layer.keys.shape[-2] == 5 + MIN_HEADROOM + 1
    torch.testing.assert_close(layer.keys[..., :5, :], k)
    layer.keys, layer.values = layer.keys[[1]], layer.values[[1]]  # rows replaced by the batcher
    kept = layer.keys.clone()
    out, _ = layer.update(step[[0]], step[[0]])
    torch.testing.assert_close(out[..., :-1, :], kept)
