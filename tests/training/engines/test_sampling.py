"""The local engine's token sampler (inverse-CDF draws, one uniform number per row)."""

from __future__ import annotations

import torch

from training.engines.local.sampling import RowSampler, choose_tokens


def test_sampled_tokens_follow_the_distribution_and_skip_filtered_tokens() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05, 0.0]])).repeat(4000, 1)
    gen = torch.Generator().manual_seed(1)
    rows = [RowSampler(1.0, 1.0, 0, 0, None) for _ in range(4000)]
    tokens = torch.tensor([c.token for c in choose_tokens(logits, rows, gen)])
    freq = torch.bincount(tokens, minlength=5).float() / 4000
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0]), atol=0.03)
    assert freq[4] == 0.0  # a zero-probability token is never drawn
    top2 = [RowSampler(1.0, 1.0, 2, 0, None) for _ in range(2000)]
    choices = choose_tokens(logits[:2000], top2, gen)
    assert {c.token for c in choices} == {0, 1}
    # the reported logprob is the renormalised top-2 distribution's
    assert {round(c.logprob, 4) for c in choices} == {round(float(torch.log(torch.tensor(0.5 / 0.8))), 4),
                                                      round(float(torch.log(torch.tensor(0.3 / 0.8))), 4)}


def test_a_seeded_row_draws_the_same_tokens_whatever_shares_its_batch() -> None:
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(3))

    def seeded_tokens(batch_rows: int) -> list[int]:
        mine = torch.Generator().manual_seed(42)
        out = []
        for _ in range(20):
            rows = [RowSampler(0.9, 1.0, 0, 0, None) for _ in range(batch_rows)] + [RowSampler(0.9, 0.8, 0, 0, mine)]
            out.append(choose_tokens(torch.cat([logits[1: batch_rows + 1], logits[:1]]), rows, torch.Generator().manual_seed(batch_rows))[-1].token)
        return out

    assert seeded_tokens(0) == seeded_tokens(5)


def test_greedy_rows_take_the_argmax() -> None:
    logits = torch.tensor([[0.1, 2.0, 0.3], [1.5, 0.0, 0.2]])
    rows = [RowSampler(0.0, 1.0, 0, 0, None), RowSampler(0.0, 1.0, 0, 0, None)]
    assert [c.token for c in choose_tokens(logits, rows, torch.Generator())] == [1, 0]
