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


def test_a_cooldown_takes_the_papers_rate_linearly_to_zero_over_the_last_updates():
    d_model, warmup, max_steps, cooldown = 128, 4, 10, 4
    optimizer = paper_optimizer([torch.nn.Parameter(torch.zeros(1))])
    scheduler = paper_scheduler(optimizer, d_model, warmup, 0.5, max_steps, cooldown)
    seen = []
    for _ in range(max_steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    paper = [inverse_sqrt_lr(n, d_model, warmup, 0.5) for n in range(1, max_steps + 1)]
    # Updates 1-6 as the paper's; 7-10 at 4/4, 3/4, 2/4 and 1/4 of it: the last update still moves the weights.
    assert seen == pytest.approx([*paper[:6], *(paper[n - 1] * (max_steps - n + 1) / cooldown for n in (7, 8, 9, 10))])
    assert paper_scheduler(optimizer, d_model, warmup, 0.5, max_steps, 0).lr_lambdas[0](9) == pytest.approx(paper[9])


def test_a_cooldown_longer_than_the_run_or_without_an_end_is_refused_before_training():
    from hf_vanilla.training.arguments import resolve
    from hf_vanilla.training.preflight import PreflightError
    from hf_vanilla.training.presets import PARSING_PRESETS

    from runs import recipe

    arguments = recipe("ptb_parse").Arguments
    assert resolve(arguments(preset="demo", cooldown_steps=0), PARSING_PRESETS).cooldown_steps == 0
    # The preset's cooldown (600 of 3,000 updates) fits a shorter run whole, and a timed run has none.
    assert resolve(arguments(preset="demo"), PARSING_PRESETS).cooldown_steps == 600
    assert resolve(arguments(preset="demo", max_steps=20), PARSING_PRESETS).cooldown_steps == 20
    assert resolve(arguments(preset="demo", max_train_minutes=5), PARSING_PRESETS).cooldown_steps == 0
    with pytest.raises(PreflightError, match="--cooldown-steps 5000 is more than --max-steps 2400"):
        resolve(arguments(preset="demo", max_steps=2400, cooldown_steps=5000), PARSING_PRESETS)
    with pytest.raises(PreflightError, match="--cooldown-steps ends at --max-steps"):
        resolve(arguments(preset="demo", max_train_minutes=5, cooldown_steps=100), PARSING_PRESETS)
    with pytest.raises(PreflightError, match="--cooldown-steps must not be negative"):
        resolve(arguments(preset="demo", cooldown_steps=-1), PARSING_PRESETS)
