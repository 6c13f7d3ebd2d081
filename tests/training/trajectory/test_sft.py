"""The paper's SFT filters and the JSONL / Parquet exports."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.calls import chat_call, rollout
from training.trajectory import build_trajectory
from training.trajectory.sft import (
    collapse_runs,
    filter_sft_trajectories,
    read_sft_parquet,
    sft_examples,
    sft_messages,
    write_sft_jsonl,
    write_sft_parquet,
)


def _traj(rid: str, actions: list[str], *, reward: float = 1.0, status: str = "ok", task: str = "t"):  # noqa: ANN202
    calls = [chat_call(i, [1, 2 + i], [3, 4], tool=("bash", json.dumps({"cmd": a}))) for i, a in enumerate(actions)]
    return build_trajectory(rollout(rid, status=status, reward=reward, task_id=task, group_id=task), calls)


def test_collapse_runs_keeps_only_the_last_of_long_runs() -> None:
    keys = ["a", "b", "b", "b", "b", "c", "c", "c", "d"]
    # run of 4 b's (>3) keeps its last; run of 3 c's stays
    assert collapse_runs(keys, 3) == [0, 4, 5, 6, 7, 8]


def test_only_successful_trajectories_are_kept() -> None:
    trajs = [_traj("fail", ["ls"], reward=0.0, task="x"), _traj("pe", ["ls"], status="policy_error", task="y"), _traj("win", ["ls"], task="z")]
    kept, report = filter_sft_trajectories(trajs)
    assert [t.rollout_id for t in kept] == ["win"]
    assert report.n_unsuccessful == 2


def test_more_than_five_identical_actions_drops_the_trajectory() -> None:
    spread = ["ls", "cat", "ls", "cat", "ls", "cat", "ls", "cat", "ls", "cat", "ls"]  # 6 x ls, never consecutive
    five = ["ls", "cat", "ls", "cat", "ls", "cat", "ls", "cat", "ls"]  # 5 x ls: kept
    kept, report = filter_sft_trajectories([_traj("spread", spread, task="a"), _traj("five", five, task="b")])
    assert [t.rollout_id for t in kept] == ["five"]
    assert report.dropped_rollouts == {"spread": "repetitive"}


def test_runs_of_more_than_three_identical_actions_keep_their_last() -> None:
    traj = _traj("r", ["ls", "cat", "cat", "cat", "cat", "done"])
    kept, report = filter_sft_trajectories([traj])
    assert report.n_collapsed_calls == 3
    assert [c.index for c in kept[0].calls] == [0, 4, 5]
    assert [s.call_index for s in kept[0].samples] == [0, 4, 5]


def test_shortest_success_per_task() -> None:
    trajs = [_traj("long", ["ls", "cat", "done"]), _traj("short", ["ls", "done"]), _traj("other", ["ls", "cat"], task="u")]
    kept, report = filter_sft_trajectories(trajs)
    assert sorted(t.rollout_id for t in kept) == ["other", "short"]
    assert report.dropped_rollouts == {"long": "not_shortest"}


def test_messages_export_collapses_repeated_steps(tmp_path: Path) -> None:
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "do it"}]
    for i in range(4):
        history += [
            {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"},
        ]
    last = chat_call(4, [1], [2], text="done", history=history)
    last["request"]["tools"] = [{"type": "function", "function": {"name": "bash"}}]
    traj = build_trajectory(rollout("r"), [last])
    record = sft_messages(traj)
    roles = [m["role"] for m in record["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert record["messages"][3]["content"] == "out 3"  # the last of the run survives
    assert record["tools"][0]["function"]["name"] == "bash"
    path = tmp_path / "sft.jsonl"
    assert write_sft_jsonl([record], path) == 1
    assert json.loads(path.read_text().splitlines()[0])["rollout_id"] == "r"


def test_parquet_round_trip_keeps_ids_and_masks(tmp_path: Path) -> None:
    calls = [chat_call(0, [1, 2], [3, 4]), chat_call(1, [1, 2, 3, 4, 9], [5])]
    examples = sft_examples(build_trajectory(rollout("r"), calls))
    assert len(examples) == 1
    assert examples[0].input_ids == [1, 2, 3, 4, 9, 5]
    assert examples[0].loss_mask == [0, 0, 1, 1, 0, 1]
    path = tmp_path / "sft.parquet"
    assert write_sft_parquet(examples, path) == 1
    back = read_sft_parquet(path)
    assert back[0].input_ids == examples[0].input_ids and back[0].loss_mask == examples[0].loss_mask
    assert back[0].rollout_id == "r" and back[0].task_id == "t"
