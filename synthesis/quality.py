"""Heuristic quality score of a proposed instruction (the offline prune ranking).

Rewards what makes a task checkable and unambiguous: concrete entities (ids, numbers,
quoted names, emails, dates), an action verb, a sensible length; penalises vague asks.
Scores lie in [0, 1]; ties are broken by candidate id, so ranking is deterministic.
"""

from __future__ import annotations

import re

_ACTIONS = re.compile(
    r"\b(reply|answer|label|tag|schedule|book|cancel|delete|remove|escalate|assign|create|add|"
    r"mark|log|update|close|compute|total|write|forward|find|move|save|turn)\b", re.I)
_ENTITY = re.compile(r"(\"[^\"]+\"|\b[A-Z]{1,4}-\d+\b|\b\d[\d.,:]*\b|[\w.]+@[\w.]+|\b[A-Z][a-z]+ [A-Z][a-z]+\b)")
_VAGUE = re.compile(r"\b(something|somehow|stuff|etc|whatever|maybe|some things|anything)\b", re.I)


def heuristic_quality(instruction: str) -> float:
    text = " ".join(instruction.split())
    words = len(text.split())
    length = 1.0 if 12 <= words <= 80 else (words / 12 if words < 12 else max(0.0, 1 - (words - 80) / 120))
    actions = min(len(set(m.lower() for m in _ACTIONS.findall(text))), 3) / 3
    entities = min(len(_ENTITY.findall(text)), 4) / 4
    vague = min(len(_VAGUE.findall(text)), 3) / 3
    score = 0.3 * length + 0.3 * actions + 0.4 * entities - 0.3 * vague
    return round(max(0.0, min(1.0, score)), 4)
