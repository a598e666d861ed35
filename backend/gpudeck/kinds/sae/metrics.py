"""Training metrics with SAELens's names, aggregated over all ranks.

Every rank calls `MetricsTracker.observe` each step (cheap, no collective) and `compute` at the
same steps (two small all_reduces): losses, l0 and explained variance are over the global
batch; timing is rank 0's plus the slowest rank's.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from gpudeck.kinds.sae.model import SaeOutput

DEAD_WINDOW_STEPS = 1000  # a feature that has not fired in this many steps is dead


def _all_reduce(tensor: torch.Tensor, op: dist.ReduceOp.RedOpType) -> torch.Tensor:
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(tensor, op=op)
    return tensor


class MetricsTracker:
    def __init__(self, *, d_sae: int, global_batch: int, start_step: int, device: torch.device):
        self.global_batch = global_batch
        self.device = device
        # Step of each feature's last firing on this rank; history_from means "not seen".
        self.last_fired = torch.full((d_sae,), start_step, dtype=torch.int64, device=device)
        # The step the firing history goes back to: the run's first step, kept across resumes.
        self.history_from = start_step
        self._steps = 0
        self._t0 = time.perf_counter()

    def state_tensors(self) -> dict[str, torch.Tensor]:
        """The firing history for a checkpoint: every rank's last firings merged (a collective:
        every rank calls it at the same steps). Without it a resumed run counted dead latents
        over the few steps since the resume, naming each latent that had not fired in them:
        the dead-latents chart jumped after every resume, then fell back."""
        merged = _all_reduce(self.last_fired.clone(), dist.ReduceOp.MAX)
        return {
            "metrics.last_fired": merged.cpu(),
            "metrics.history_from": torch.tensor(self.history_from, dtype=torch.int64),
        }

    def restore(self, state_tensors: dict[str, torch.Tensor]) -> None:
        """Continue the saved firing history; a checkpoint from before it was saved has none
        (the window then starts at the resume, as it did)."""
        saved = state_tensors.get("metrics.last_fired")
        if saved is None:
            return
        self.last_fired.copy_(saved)
        self.history_from = int(state_tensors["metrics.history_from"])

    def observe(self, step: int, fired: torch.Tensor) -> None:
        self.last_fired.masked_fill_(fired, step)
        self._steps += 1

    def _timing(self) -> tuple[float, float]:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        elapsed, steps = now - self._t0, max(1, self._steps)
        self._t0, self._steps = now, 0
        return elapsed / steps, self.global_batch * steps / max(elapsed, 1e-9)

    @torch.no_grad()
    def compute(
        self, step: int, batch: torch.Tensor, output: SaeOutput, sparsity_name: str
    ) -> dict[str, float]:
        """Call on every rank at the same steps; returns the same losses everywhere.
        `sparsity_name`: the sparsity loss's metric name (l1_loss, l0_loss; '' for none)."""
        x, x_hat = batch.double(), output.sae_out.double()
        n = x.shape[0]
        scalars = torch.stack(
            [
                output.mse_loss.double() * n,
                output.sparsity_loss.double() * n,
                output.aux_loss.double() * n,
                output.latents.active_count().double(),
                (x_hat - x).pow(2).sum(),
                torch.tensor(float(n), dtype=torch.float64, device=x.device),
            ]
        )
        sums = _all_reduce(torch.cat([scalars, x.sum(0), x.pow(2).sum(0)]), dist.ReduceOp.SUM)
        step_time_s, activations_per_s = self._timing()
        maxes = torch.cat(
            [
                self.last_fired.double(),
                torch.tensor([step_time_s], dtype=torch.float64, device=self.device),
            ]
        )
        maxes = _all_reduce(maxes, dist.ReduceOp.MAX).cpu()
        metrics = _loss_metrics(sums.cpu(), x.shape[1], sparsity_name)
        window = min(DEAD_WINDOW_STEPS, step - self.history_from)
        # Latents that fired on no training sample of the window (every rank's): the
        # training-window count; heldout.py counts those firing on no held-out row.
        dead = float((maxes[:-1] <= step - window).sum())
        metrics["dead_features"] = dead
        # what the count is over: a 400-step run's is its 400 steps, not 1,000
        metrics["dead_window_steps"] = float(window)
        metrics["dead_pct"] = 100.0 * dead / len(self.last_fired)
        metrics["activations_per_s"] = activations_per_s
        metrics["step_time_s"] = step_time_s
        metrics["step_time_max_s"] = float(maxes[-1])
        return metrics


def _loss_metrics(sums: torch.Tensor, d_in: int, sparsity_name: str) -> dict[str, float]:
    mse_sum, sparsity_sum, aux_sum, l0_sum, sq_err, n = sums[:6].tolist()
    sum_x, sum_x2 = sums[6 : 6 + d_in], sums[6 + d_in :]
    total_variance = float((sum_x2 - sum_x.pow(2) / n).sum())
    metrics = {
        "mse_loss": mse_sum / n,
        "overall_loss": (mse_sum + sparsity_sum + aux_sum) / n,
        "l0": l0_sum / n,
        # SAELens's definition: 1 - summed squared error / summed variance around the mean.
        "explained_variance": 1.0 - sq_err / max(total_variance, 1e-12),
    }
    if sparsity_name:
        metrics[sparsity_name] = sparsity_sum / n
    else:  # the TopK family: AuxK is their only loss beside the MSE
        metrics["auxk_loss"] = aux_sum / n
    return metrics


class DeadLatents:
    """Global steps since each latent last fired, updated every step, so the AuxK dead mask is
    the same on every rank and is what one rank with the whole batch would see.

    With `min_frequency` > 0 a latent is also dead while its firing frequency (the fraction of
    the global batch it fires on, a running average at FREQUENCY_RATE per step) is below it:
    BatchTopK's redundant latents fire too rarely to matter yet too often for any window to
    mark them.

    Both rules read one collective a step, a SUM over ranks of the firing counts (int32[d_sae]:
    exact, a count is at most the global batch): a latent fired on some rank where the sum is
    above 0. It was two (a MAX of the fired flags, then a SUM of the counts for the frequency
    rule), which made a tiny 2-rank step with the rule ~30 % slower than without it."""

    FREQUENCY_RATE = 0.01

    def __init__(
        self,
        d_sae: int,
        window: int,
        device: torch.device,
        *,
        min_frequency: float = 0.0,
        global_batch: int = 1,
    ) -> None:
        self.window = window
        self.min_frequency = min_frequency
        self.global_batch = global_batch
        self.steps_since_fired = torch.zeros(d_sae, dtype=torch.int64, device=device)
        # -1 until the first step sets it (the average starts at the first batch's value).
        self.frequency = torch.full((d_sae,), -1.0, dtype=torch.float64, device=device)
        self.any_dead = False

    def _dead(self) -> torch.Tensor:
        dead = self.steps_since_fired >= self.window
        if self.min_frequency > 0:
            dead |= (self.frequency >= 0) & (self.frequency < self.min_frequency)
        return dead

    def mask(self) -> torch.Tensor | None:
        """Dead latents, or None when there are none (AuxK then costs nothing)."""
        return self._dead() if self.any_dead else None

    def observe(self, counts: torch.Tensor) -> None:
        """`counts`: on how many of this rank's samples each latent fired (whole numbers)."""
        total = _all_reduce(counts.to(torch.int32), dist.ReduceOp.SUM)
        self.steps_since_fired.add_(1).masked_fill_(total > 0, 0)
        if self.min_frequency > 0:
            rate = total.double() / self.global_batch
            moved = (1 - self.FREQUENCY_RATE) * self.frequency + self.FREQUENCY_RATE * rate
            self.frequency = torch.where(self.frequency < 0, rate, moved)
        # One host sync per step (SAELens has the same); the same answer on every rank.
        self.any_dead = bool(self._dead().any())

    def restore(self, steps_since_fired: torch.Tensor, frequency: torch.Tensor | None) -> None:
        self.steps_since_fired.copy_(steps_since_fired)
        if frequency is not None:  # checkpoints from before the frequency rule lack it
            self.frequency.copy_(frequency)
        self.any_dead = bool(self._dead().any())


@torch.no_grad()
def mmcs(true_features: torch.Tensor, w_dec: torch.Tensor) -> float:
    """Mean over true features of the max cosine similarity with any decoder row."""
    true_unit = torch.nn.functional.normalize(true_features.float(), dim=1)
    dec_unit = torch.nn.functional.normalize(w_dec.detach().float().cpu(), dim=1)
    return float((true_unit @ dec_unit.T).max(dim=1).values.mean())
