"""The heuristic prune ranking prefers concrete, checkable instructions."""

from __future__ import annotations

from synthesis.procedural.families import FAMILIES, generate
from synthesis.quality import heuristic_quality


def test_concrete_beats_vague_and_scores_are_bounded() -> None:
    concrete = ('Reply to Dana Okafor\'s email about invoice INV-20931 and confirm payment on March 6; '
                'label it "Billing".')
    vague = "Maybe do something with the emails, whatever seems useful, etc."
    assert heuristic_quality(concrete) > heuristic_quality(vague) + 0.3
    assert 0.0 <= heuristic_quality("") <= heuristic_quality(vague) <= 1.0
    for fam in FAMILIES:
        assert heuristic_quality(generate(fam, 1).instruction) >= 0.35, fam
