"""The paper's optimiser and learning-rate schedule (section 5.3)."""

import torch
from torch.optim.lr_scheduler import LambdaLR


def inverse_sqrt_lr(step: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), for steps counted from 1."""
    step = max(step, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def peak_learning_rate(d_model: int, warmup_steps: int, lr_scale: float = 1.0) -> float:
    """The learning rate at the end of warmup (update w): lr_scale * d_model^-0.5 * w^-0.5."""
    return inverse_sqrt_lr(warmup_steps, d_model, warmup_steps, lr_scale)


def scale_for_peak(peak: float, d_model: int, warmup_steps: int) -> float:
    """The scale on the paper's schedule whose learning rate at the end of warmup is `peak` (--learning-rate), for
    the model's real d_model."""
    return peak / peak_learning_rate(d_model, warmup_steps)


def paper_optimizer(
    parameters, betas: tuple[float, float] = (0.9, 0.98), eps: float = 1e-9, fused: bool | None = None
) -> torch.optim.Adam:
    """Adam(beta1 0.9, beta2 0.98, epsilon 1e-9) with base lr 1, scaled by `paper_scheduler`; `fused` picks torch's
    fused implementation."""
    return torch.optim.Adam(parameters, lr=1.0, betas=betas, eps=eps, fused=fused)


def cooldown_factor(step: int, max_steps: int | None, cooldown_steps: int) -> float:
    """1 until the last `cooldown_steps` of `max_steps` updates, then falling linearly: (max_steps - step + 1) /
    cooldown_steps at update `step` (1-based), 1 / cooldown_steps at the last."""
    if not cooldown_steps or max_steps is None:
        return 1.0
    return min(1.0, max(max_steps - step + 1, 0) / cooldown_steps)


def paper_scheduler(
    optimizer: torch.optim.Optimizer,
    d_model: int,
    warmup_steps: int,
    scale: float = 1.0,
    max_steps: int | None = None,
    cooldown_steps: int = 0,
) -> LambdaLR:
    """Sets the learning rate of update n (n = 1, 2, ...) to `inverse_sqrt_lr(n)`, times `cooldown_factor(n)`."""

    def rate(index: int) -> float:
        step = index + 1
        return inverse_sqrt_lr(step, d_model, warmup_steps, scale) * cooldown_factor(step, max_steps, cooldown_steps)

    return LambdaLR(optimizer, rate)
