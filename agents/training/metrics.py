"""Training logs: TensorBoard scalars (optional) and the same rows in ``metrics.csv``.

Tags: ``charts/*`` (throughput, returns against each opponent kind, learning rate), ``losses/*`` and
``eval/*`` (duplicate evaluation against ``eval_opponents``: points per round difference with its
95% CI). ``metrics.csv`` has the columns ``step, wall_s, tag, value``. A resumed run first drops the
rows logged after its checkpoint's step (they are logged again as training replays those steps), as
TensorBoard's ``purge_step`` does for the event files, so no (step, tag) row is ever duplicated.
"""

from __future__ import annotations

import csv
import os


def drop_rows_after(csv_path: str, step: int) -> int:
    """Rewrite ``csv_path`` (atomically) without the rows of steps after ``step``; return how many went."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return 0
    head, body = rows[0], rows[1:]
    keep = [r for r in body if not (r and r[0].isdigit() and int(r[0]) > step)]
    if len(keep) == len(body):
        return 0
    tmp = csv_path + ".tmp"
    with open(tmp, "w", newline="") as f:
        csv.writer(f).writerows([head, *keep])
    os.replace(tmp, csv_path)
    return len(body) - len(keep)


class MetricsLogger:
    """Writes each scalar to TensorBoard (optional) and to ``metrics.csv`` (step, wall_s, tag, value)."""

    def __init__(self, run_dir: str, tensorboard: bool = True, purge_step: int | None = None):
        os.makedirs(run_dir, exist_ok=True)
        self.csv_path = os.path.join(run_dir, "metrics.csv")
        new = not os.path.exists(self.csv_path)
        if not new and purge_step is not None:
            drop_rows_after(self.csv_path, purge_step)
        self._csv_file = open(self.csv_path, "a", newline="")  # noqa: SIM115 - closed in close()
        self._csv = csv.writer(self._csv_file)
        if new:
            self._csv.writerow(["step", "wall_s", "tag", "value"])
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter  # the [train] extra

            self.writer = SummaryWriter(run_dir, purge_step=purge_step)

    def scalar(self, tag: str, value: float, step: int, wall_s: float) -> None:
        """Record one scalar at env step ``step`` and training wall time ``wall_s``; return None."""
        value = float(value)
        self._csv.writerow([int(step), f"{wall_s:.3f}", tag, repr(value)])
        if self.writer is not None:
            self.writer.add_scalar(tag, value, int(step))

    def flush(self) -> None:
        """Flush both outputs to disk; return None."""
        self._csv_file.flush()
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        """Flush and close both outputs; return None."""
        self.flush()
        self._csv_file.close()
        if self.writer is not None:
            self.writer.close()
