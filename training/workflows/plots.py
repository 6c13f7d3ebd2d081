"""PNG curves of a run's per-step metrics (reward, success, episode length, loss)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def curves_png(
    series: Mapping[str, Sequence[tuple[float, float]]], path: str | Path, *, title: str = "", xlabel: str = "step"
) -> Path:
    """One panel per named series of (x, y) points, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, pts in series.items() if pts]
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.2 * max(1, len(names)), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=False):
        xs, ys = zip(*series[name], strict=True)
        ax.plot(xs, ys, marker="o", linewidth=2)
        ax.set_title(name.replace("_", " "))
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
