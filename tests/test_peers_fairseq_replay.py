"""`benchmarks/peers/fairseq/replay.py`: fairseq's recorded updates replayed by the recipe's training step. No test
needs fairseq's environment: the replay is checked against the same updates written out here by hand (decoder inputs
behind </s>, label-smoothed cross-entropy over the batch's target tokens, Adam at each update's rate)."""

import copy

import pytest
import torch
import torch.nn.functional as F

from hf_vanilla.data.encoding import EncodedPairs

from benchmarks.peers import translation as translation_task
from benchmarks.peers.fairseq import replay as replay_module
from benchmarks.peers.fairseq import translation_table as fairseq_table
from runs import tiny_model

# A tiny model's updates: (ids of the batch's pairs, the rate fairseq ran the update at; its first at 0).
UPDATES = [([0, 1, 2], 0.0), ([3, 4], 1e-3), ([1, 4, 0], 2e-3), ([2, 3], 3e-3)]


def random_pairs() -> list[tuple[list[int], list[int]]]:
    generator = torch.Generator().manual_seed(5)
    lengths = ((3, 6), (8, 2), (5, 5), (1, 9), (6, 4))
    return [
        (torch.randint(4, 1000, (n,), generator=generator).tolist() + [2],
         torch.randint(4, 1000, (m,), generator=generator).tolist() + [2])
        for n, m in lengths
    ]  # fmt: skip


def model_starting_with_eos():
    model = tiny_model(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    model.config.decoder_start_token_id = model.config.eos_token_id
    return model


def by_hand(model, pairs, updates, rates) -> list[float]:
    """The updates written out: each batch right-padded, the decoder fed </s> then the target, the loss
    sum((1 - eps) * NLL + eps * mean(-log p)) / target tokens, torch's Adam at `rates` (one an update). Returns each
    update's NLL sum before its step."""
    config = model.config
    eps, eos, pad = config.label_smoothing, config.eos_token_id, config.pad_token_id
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    sums = []
    for (ids, _), rate in zip(updates, rates):
        sources = [pairs[i][0] for i in ids]
        targets = [pairs[i][1] for i in ids]
        width, length = max(map(len, sources)), max(map(len, targets))
        input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
        decoder_ids = torch.tensor([[eos] + t[:-1] + [pad] * (length - len(t)) for t in targets])
        kept = torch.tensor([[True] * len(t) + [False] * (length - len(t)) for t in targets])
        gold = torch.tensor([t + [0] * (length - len(t)) for t in targets])
        logits = model(input_ids=input_ids, attention_mask=(input_ids != pad).long(), decoder_input_ids=decoder_ids)
        log_probs = F.log_softmax(logits.logits.float(), dim=-1)
        nll = -log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
        per_token = (1 - eps) * nll - eps * log_probs.mean(-1)
        loss = per_token[kept].sum() / kept.sum()
        loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sums.append(nll[kept].sum().item())
    return sums


def recorded(updates) -> list[dict]:
    return [
        {"update": n + 1, "ids": ids, "lr": rate, "nll_sum": 1.0, "loss_sum": 1.0}
        for n, (ids, rate) in enumerate(updates)
    ]


def test_the_replay_is_the_update_written_out_by_hand():
    pairs, model = random_pairs(), model_starting_with_eos()
    twin = copy.deepcopy(model)
    examples = EncodedPairs.from_lists(*zip(*pairs))
    rows = replay_module.replay(model, examples, recorded(UPDATES), (0.9, 0.98), 1e-9)
    expected = by_hand(twin, pairs, UPDATES, [rate for _, rate in UPDATES])
    # The same float32 operations in another order: sums of about 15 token NLLs near 7 agree to a few ulps.
    assert [row["nll_sum"] for row in rows] == pytest.approx(expected, rel=1e-5)
    assert [row["tokens"] for row in rows] == [sum(len(pairs[i][1]) for i in ids) for ids, _ in UPDATES]
    # Each update's rate is the one it ran at, not its successor's: a replay one rate late no longer agrees.
    late = by_hand(copy.deepcopy(model_starting_with_eos()), pairs, UPDATES, [1e-3, 2e-3, 3e-3, 4e-3])
    assert abs(late[2] - expected[2]) > 1e-3 * expected[2]


def test_drift_and_summary():
    start = {"w": torch.zeros(2, 2), "model.encoder.embed_positions.table.weight": torch.zeros(3)}
    reference = {"w": torch.full((2, 2), 1.0), "model.encoder.embed_positions.table.weight": torch.ones(3)}
    tensors = replay_module.drift({"w": torch.full((2, 2), 1.5)}, start, reference)
    assert tensors == {"w": {"moved": pytest.approx(2.0), "differs": pytest.approx(1.0)}}  # positions left out
    rows = [{"nll_sum": 99.0, "fairseq_nll_sum": 100.0}, {"nll_sum": 50.0, "fairseq_nll_sum": 50.0}]
    figures = replay_module.summary(rows, tensors | {"v": {"moved": 4.0, "differs": 0.1}})
    assert figures == {
        "largest_relative_nll_difference": pytest.approx(0.01),
        "median_weight_ratio": pytest.approx(0.5),
        "largest_weight_ratio": pytest.approx(0.5),
    }


def test_fairseq_runs_the_demo_s_flags_without_dropout_for_the_updates_asked():
    settings = translation_task.demo_settings("demo")
    flags = replay_module.replay_flags(settings, 3, 40)
    values = dict(zip(flags, flags[1:]))
    for flag in ("--dropout", "--attention-dropout", "--activation-dropout"):
        assert float(values[flag]) == 0.0
    assert values["--max-update"] == "40" and values["--seed"] == "3" and values["--log-interval"] == "1"
    assert "--no-save" in flags and "--disable-validation" in flags
    demo = fairseq_table.fairseq_train_flags(settings, 3)
    demo_values = dict(zip(demo, demo[1:]))
    for flag in ("--lr", "--warmup-updates", "--max-tokens", "--label-smoothing", "--adam-betas", "--adam-eps"):
        assert values[flag] == demo_values[flag]


def test_too_few_updates_and_a_missing_run_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        replay_module.parse_args(["--fairseq-run", str(tmp_path), "--venvs", str(tmp_path), "--updates", "1"])
    assert stopped.value.code == 2
    assert "--updates must be at least 2 (the first update runs at learning rate 0), not 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        replay_module.main(["--fairseq-run", str(tmp_path), "--venvs", str(tmp_path)])
    missing = tmp_path / "data" / "dict.txt"
    expected = (
        f"fairseq_replay: {missing} is missing: first python -m benchmarks.peers --task translation --system fairseq"
    )
    assert str(stopped.value) == expected
