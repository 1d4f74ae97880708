"""The paper's learning-rate schedule and Adam settings (`hf_vanilla.training.schedule`, section 5.3)."""

import pytest
import torch

from hf_vanilla.training.schedule import inverse_sqrt_lr, paper_optimizer, paper_scheduler


def test_learning_rate_follows_the_paper():
    d_model, warmup = 512, 4000
    for step in (1, 100, 3999, 4000, 4001, 100_000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert inverse_sqrt_lr(step, d_model, warmup) == pytest.approx(expected)
    assert inverse_sqrt_lr(4000, 512, 4000) == pytest.approx(512**-0.5 * 4000**-0.5)  # the peak, ~7e-4
    optimizer = paper_optimizer([torch.nn.Parameter(torch.zeros(1))])
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9
    scheduler = paper_scheduler(optimizer, d_model, warmup)
    seen = []
    for _ in range(3):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([inverse_sqrt_lr(n, d_model, warmup) for n in (1, 2, 3)])
