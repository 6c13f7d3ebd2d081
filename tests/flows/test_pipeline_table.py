"""The main job's per-stage summary table, as a plain log (80 columns, no terminal) prints it."""

from __future__ import annotations

import io

from rich.console import Console

from cli.commands.pipeline import stage_table

NOTE = "14 GRPO steps, 24 of 56 groups zero-variance (no gradient), 132 samples trained"


def _render(stages: list[dict], width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(stage_table(stages))
    return console.export_text()


def _rows() -> list[dict]:
    return [
        {"stage": "base", "n": 32, "mean_reward": 0.041, "stderr": 0.009, "updates": None, "samples_trained": None,
         "note": "the starting policy"},
        {"stage": "sft+rl", "n": 96, "mean_reward": 0.867, "stderr": 0.027, "gain": 0.259, "gain_se": 0.044,
         "clear": True, "updates": 20, "samples_trained": 132, "note": NOTE},
    ]


def test_an_80_column_log_keeps_every_word_of_a_long_note() -> None:
    text = _render(_rows(), 80)
    assert "…" not in text
    cells = " ".join(line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") >= 9)
    # a word wider than the column folds over two lines: compare the characters
    assert "".join(NOTE.split()) in "".join(cells.split())


def test_the_gain_verdict_updates_and_samples_are_in_the_row() -> None:
    text = _render(_rows(), 200)
    row = next(line for line in text.splitlines() if line.startswith("│ sft+rl"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == ["sft+rl", "96", "0.867 ± 0.027", "+0.259 ± 0.044", "yes", "20", "132", NOTE]
    base = next(line for line in text.splitlines() if line.startswith("│ base"))
    assert [c.strip() for c in base.split("│")[1:-1]] == ["base", "32", "0.041 ± 0.009", "-", "-", "-", "-",
                                                           "the starting policy"]


def test_the_grpo_steps_table_shows_the_replies_cut_at_the_cap() -> None:
    from cli.commands.pipeline import steps_table

    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(steps_table([{"step": 1, "reward": 0.43, "cut_replies": 5, "samples": 13, "zero_var_groups": "1/4",
                                "updates": 2, "loss": 0.0004}, {"step": 2, "reward": 0.38}]))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in console.export_text().splitlines()
            if line.startswith("│ ") and line.count("│") == 8]
    assert rows == [["1", "0.43", "5", "13", "1/4", "2", "0.0004"], ["2", "0.38", "-", "-", "-", "-", "-"]]
