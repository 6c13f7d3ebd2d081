"""Which tasks a GRPO step rolls out.

Epochs over a shuffled order: every task comes up once before any comes up twice. (The
per-step shuffle this replaces drew independent subsets: in 16 steps of 4 tasks from 24,
some tasks came up five times and some never.)

Solved tasks leave the rotation (``train.skip_solved_tasks``). A task whose last group
scored the full reward in every rollout gave GRPO nothing: a zero-variance group is
dropped before the loss. After SFT most training tasks end up there within an epoch, and a
step of four groups then trains on one (issue 13: 3 of 4 groups zero-variance from step 7).
Such a task is skipped in later epochs. It comes back only when fewer unsolved tasks remain
than a step needs: the step is then filled from the solved ones, at random. A solved task
that scores less than full reward in a later group is unsolved again. Prompts the policy
already solves every time are filtered out in the same way by the Skywork-OR1 and POLARIS
recipes. DAPO's dynamic sampling over-samples groups instead, which costs more rollouts per
step than a 2-core box has.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from environments.records import RolloutResult
from environments.taskdir.io import TaskDir

#: A rollout "solves" its task at the verifier's full reward.
FULL_REWARD = 1.0


class TaskSampler:
    """Draws each step's tasks; :meth:`observe` feeds back the groups' results."""

    def __init__(self, tasks: Sequence[TaskDir], rng: random.Random, *, skip_solved: bool = False) -> None:
        if not tasks:
            raise ValueError("no tasks to sample from")
        self._tasks = list(tasks)
        self._rng = rng
        self._skip_solved = skip_solved
        self._queue: list[TaskDir] = []  # the rest of the current epoch, next task last
        self.solved: set[str] = set()  # ids of tasks whose last group scored full reward in every rollout

    def draw(self, n: int) -> list[TaskDir]:
        """``n`` tasks for one step: the next ones of the epoch, a new epoch when it runs out.

        With solved-task skipping, an epoch holds only unsolved tasks. Fewer than ``n`` unsolved:
        the step gets every unsolved task and solved ones at random for the rest."""
        out: list[TaskDir] = []
        while len(out) < n:
            if not self._queue:
                pool = self._active()
                self._rng.shuffle(pool)
                taken = {t.id for t in out}  # this step's tasks from the last epoch come last in the new one
                self._queue = [t for t in pool if t.id in taken] + [t for t in pool if t.id not in taken]
                if not self._queue or self._queue[-1].id in taken:
                    break  # every active task is in this step already
            task = self._queue.pop()
            if not (self._skip_solved and task.id in self.solved):  # solved since this epoch began
                out.append(task)
        if len(out) < n:  # fill from the solved tasks (or repeat, when there are fewer tasks than n)
            taken = {t.id for t in out}
            rest = [t for t in self._tasks if t.id not in taken] or self._tasks
            while len(out) < n:
                out.extend(self._rng.sample(rest, min(len(rest), n - len(out))))
        return out

    def observe(self, results: Sequence[RolloutResult]) -> None:
        """Mark each task of ``results`` solved (every rollout ok at full reward) or unsolved."""
        by_task: dict[str, list[RolloutResult]] = defaultdict(list)
        for r in results:
            if r.task_id is not None:
                by_task[r.task_id].append(r)
        for task_id, group in by_task.items():
            if all(r.status == "ok" and (r.reward or 0.0) >= FULL_REWARD for r in group):
                self.solved.add(task_id)
            else:
                self.solved.discard(task_id)

    def _active(self) -> list[TaskDir]:
        if not self._skip_solved:
            return list(self._tasks)
        return [t for t in self._tasks if t.id not in self.solved]
