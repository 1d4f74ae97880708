"""The paper's schedule, token-budget batching, checkpoint averaging and exact resume."""

import json

import pytest
import torch
from safetensors.torch import load_file

from hf_vanilla import VanillaTransformerForConditionalGeneration
from hf_vanilla.data.batching import TokenBudgetBatchSampler, random_batches
from hf_vanilla.data.corpora import load_translation_corpus
from hf_vanilla.data.encoding import EncodedPairs, encode_pairs
from hf_vanilla.tokenization import train_shared_bpe
from hf_vanilla.training.checkpoints import average_checkpoints, list_checkpoints
from hf_vanilla.training.schedule import inverse_sqrt_lr, paper_optimizer, paper_scheduler

from runs import run_loop, tiny_model


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


def test_batches_respect_the_budget_cover_every_pair_and_shard_evenly():
    source = [(i * 7) % 23 + 1 for i in range(500)]
    target = [(i * 5) % 29 + 1 for i in range(500)]
    sampler = TokenBudgetBatchSampler(source, target, max_tokens=120, seed=3)
    batches = sampler.all_batches(0)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for batch in batches:
        assert max(source[i] for i in batch) * len(batch) <= 120 and max(target[i] for i in batch) * len(batch) <= 120
    assert batches == TokenBudgetBatchSampler(source, target, max_tokens=120, seed=3).all_batches(0)
    assert batches != sampler.all_batches(1)
    shards = [
        TokenBudgetBatchSampler(source, target, 120, seed=3, num_replicas=3, rank=r).batches(0) for r in range(3)
    ]
    assert len({len(s) for s in shards}) == 1
    flat = [tuple(b) for s in shards for b in s]
    assert len(flat) == len(set(flat))


def test_budget_smaller_than_a_sentence_is_a_clear_error():
    with pytest.raises(ValueError, match="smaller than the longest sentence"):
        TokenBudgetBatchSampler([5, 50], [5, 5], max_tokens=20)


def test_padding_on_the_shared_wmt_sample_is_under_5_percent(wmt_sample):
    corpus = load_translation_corpus(str(wmt_sample), moses_detokenize=True)
    pairs = corpus["train"]
    tokenizer = train_shared_bpe(
        (p[lang] for p in pairs["translation"] for lang in ("en", "de")), vocab_size=8000, show_progress=False
    )
    examples = encode_pairs(pairs, tokenizer, "en", "de")
    source, target = examples.source_lengths.tolist(), examples.target_lengths.tolist()
    sampler = TokenBudgetBatchSampler(source, target, max_tokens=1024, seed=0)
    bucketed = sampler.padding_fraction(sampler.all_batches(0))
    average_batch = len(source) // len(sampler.all_batches(0))
    shuffled = sampler.padding_fraction(random_batches(len(source), average_batch, seed=0))
    assert bucketed < 0.05 < shuffled, (bucketed, shuffled)


@pytest.mark.parametrize("multiple", [1, 8])
def test_encoded_pairs_batch_equals_padding_each_row_by_hand(multiple):
    sources = [[3 + (i * 7 + j) % 50 for j in range(1 + i % 9)] + [2] for i in range(40)]
    targets = [[4 + (i * 5 + j) % 60 for j in range(i % 13)] + [2] for i in range(40)]
    examples = EncodedPairs.from_lists(sources, targets)
    assert examples.source_lengths.tolist() == [len(s) for s in sources]
    indices = [31, 0, 7, 12, 7]  # any order, repeats allowed
    batch = examples.collate(indices, pad_token_id=1, pad_to_multiple_of=multiple)
    width = -(-max(len(sources[i]) for i in indices) // multiple) * multiple
    assert width == (9 if multiple == 1 else 16)
    assert batch["input_ids"].tolist() == [sources[i] + [1] * (width - len(sources[i])) for i in indices]
    assert batch["attention_mask"].tolist() == [
        [1] * len(sources[i]) + [0] * (width - len(sources[i])) for i in indices
    ]
    width = -(-max(len(targets[i]) for i in indices) // multiple) * multiple
    assert batch["labels"].tolist() == [targets[i] + [-100] * (width - len(targets[i])) for i in indices]
    assert all(t.dtype == torch.long for t in batch.values())


def test_encode_pairs_holds_the_tokenizer_ids_after_a_filter(wmt_sample):
    """`encode_pairs` reads the ids straight from Arrow; a filtered dataset (an indices mapping) must not shift
    rows."""
    pairs = (
        load_translation_corpus(str(wmt_sample))["train"]
        .select(range(300))
        .filter(lambda p: len(p["translation"]["en"]) % 3)
    )
    tokenizer = train_shared_bpe(
        (p[lang] for p in pairs["translation"] for lang in ("en", "de")), vocab_size=500, show_progress=False
    )
    examples = encode_pairs(pairs, tokenizer, "en", "de")
    english = [p["en"] for p in pairs["translation"]]
    german = [p["de"] for p in pairs["translation"]]
    assert len(examples) == len(english) < 300
    batch = examples.collate(range(len(english)), tokenizer.pad_token_id)
    for row, (source, target) in enumerate(zip(tokenizer(english)["input_ids"], tokenizer(german)["input_ids"])):
        assert batch["input_ids"][row, : len(source)].tolist() == source
        assert batch["labels"][row, : len(target)].tolist() == target


def test_encoded_pairs_read_chunked_and_sliced_arrow_columns():
    import pyarrow as pa

    from hf_vanilla.data.encoding import _flat

    rows = [[5, 6, 2], [7, 2], [8, 9, 10, 2], [2], [11, 2]]
    column = pa.chunked_array([pa.array([[1, 1]] + rows[:2]).slice(1), pa.array(rows[2:4]), pa.array(rows[4:])])
    examples = EncodedPairs(*_flat(column), *_flat(column))
    assert examples.source_lengths.tolist() == [3, 2, 4, 1, 2]
    assert examples.collate([2, 4, 0], 0)["input_ids"].tolist() == [[8, 9, 10, 2], [11, 2, 0, 0], [5, 6, 2, 0]]


def test_encoded_pairs_reject_mismatched_or_empty_sides():
    with pytest.raises(ValueError, match="3 sources but 2 targets"):
        EncodedPairs.from_lists([[2], [2], [2]], [[2], [2]])
    with pytest.raises(ValueError, match="at least one token"):
        EncodedPairs.from_lists([[2], []], [[2], [2]])


def test_averaging_checkpoints_gives_the_mean_and_a_loadable_model(tmp_path):
    folders = []
    for value in (1.0, 2.0, 6.0):
        model = tiny_model()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(value)
        model.save_pretrained(tmp_path / f"m{value}")
        folders.append(tmp_path / f"m{value}")
    averaged = average_checkpoints(folders, tmp_path / "avg")
    weights = load_file(str(averaged / "model.safetensors"))
    assert all(torch.all(t == 3.0) for t in weights.values())
    loaded = VanillaTransformerForConditionalGeneration.from_pretrained(averaged)
    assert float(loaded.lm_head.weight.detach()[5, 5]) == 3.0


def test_an_interrupted_run_resumed_ends_with_the_same_weights(tmp_path):
    straight = run_loop(tmp_path / "straight", 6)[1]
    interrupted = tmp_path / "interrupted"
    run_loop(interrupted, 4)
    # A checkpoint half-written when the run was killed must never be picked up.
    (interrupted / ".tmp-checkpoint-00000006").mkdir()
    (interrupted / "checkpoint-00000008").mkdir()
    assert [p.name for p in list_checkpoints(interrupted)] == ["checkpoint-00000002", "checkpoint-00000004"]
    result, resumed = run_loop(interrupted, 6, resume=True)
    assert result.steps == 6
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name  # bit-identical
    log = [json.loads(line) for line in (interrupted / "train_log.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in log] == [1, 2, 3, 4, 5, 6]
    assert [p.name for p in list_checkpoints(interrupted)] == [
        "checkpoint-00000002",
        "checkpoint-00000004",
        "checkpoint-00000006",
    ]


def test_a_time_budget_alone_bounds_the_run(tmp_path):
    """--max-train-minutes without --max-steps: no number of updates at all; the budget, checked at each log line
    (every update here), ends the run after its first update, which is checkpointed."""
    result, _ = run_loop(tmp_path, None, max_train_minutes=1e-9)
    assert result.steps == 1 and [p.name for p in list_checkpoints(tmp_path)] == ["checkpoint-00000001"]


def test_a_compiled_model_trains_on_lengths_padded_to_8_as_the_eager_one_and_counts_its_graphs(tmp_path):
    """Under a torch.compile backend (aot_eager here: the graphs without inductor's code generation) the loop pads
    batch lengths to multiples of 8 and counts the graphs built: few for 6 updates of varying batches (dynamo marks
    a dimension dynamic once it has changed); padding is masked, so every update's loss is the eager loop's (no
    dropout; the weights drift apart only through Adam's normalisation of gradients that are zero up to rounding,
    e.g. of the key biases)."""
    no_dropout = {"dropout": 0.0}
    eager, _ = run_loop(tmp_path / "eager", 6, save_every=100, model_overrides=no_dropout)
    compiled, _ = run_loop(
        tmp_path / "compiled", 6, save_every=100, dynamo_backend="aot_eager", model_overrides=no_dropout
    )
    assert (eager.dynamo_backend, eager.compiled_graphs) == ("no", 0)
    assert compiled.dynamo_backend == "aot_eager" and 1 <= compiled.compiled_graphs <= 4, compiled.compiled_graphs
    losses = {}
    for name in ("eager", "compiled"):
        log = [json.loads(line) for line in (tmp_path / name / "train_log.jsonl").read_text().splitlines()]
        losses[name] = [entry["loss"] for entry in log if "loss" in entry]
    assert len(losses["eager"]) == 6 and len(set(losses["eager"])) > 1
    assert losses["compiled"] == pytest.approx(losses["eager"], abs=2e-3)


def test_a_compiled_run_resumes_from_its_checkpoint(tmp_path):
    compiled = {"save_every": 2, "dynamo_backend": "aot_eager", "model_overrides": {"dropout": 0.0}}
    run_loop(tmp_path, 2, **compiled)
    resumed, _ = run_loop(tmp_path, 4, resume=True, **compiled)
    assert resumed.steps == 4 and [c.name for c in list_checkpoints(tmp_path)][-1] == "checkpoint-00000004"


def test_torch_compile_asks_for_inductor_unless_the_launcher_chose_a_backend(tmp_path, monkeypatch):
    from accelerate.state import AcceleratorState

    from hf_vanilla.training.accelerator import create_accelerator

    for launched, flag, expected in (("no", True, "INDUCTOR"), ("no", False, "NO"), ("aot_eager", True, "AOT_EAGER")):
        AcceleratorState._reset_state()
        monkeypatch.setenv("ACCELERATE_DYNAMO_BACKEND", launched)
        accelerator = create_accelerator("test", tmp_path, None, None, {}, torch_compile=flag)
        assert accelerator.state.dynamo_plugin.backend.value == expected, (launched, flag)
    AcceleratorState._reset_state()


def test_an_update_reads_nothing_back_from_the_device(tmp_path, monkeypatch):
    """On a GPU every host read of a tensor (bool(), item(), float()) waits for the device. The loop keeps its loss on
    the device and reads it only when logging; the model checks token ids only outside training (the loop checks the
    corpus once): as many reads for 12 updates as for 3."""
    import traceback

    reads = []

    def record(original):
        def read(self, *args):
            caller = traceback.extract_stack()[-2].filename
            if "hf_vanilla" in caller:
                reads.append(caller)
            return original(self, *args)

        return read

    for name in ("__bool__", "item", "__float__", "__int__", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, record(getattr(torch.Tensor, name)))
    counts = {}
    for steps in (3, 12):
        reads.clear()
        run_loop(tmp_path / str(steps), steps, log_every=1000, save_every=1000)
        counts[steps] = len(reads)  # the final log and checkpoint read what they report and save
    assert counts[3] == counts[12], (counts, reads)


def test_a_corpus_with_ids_outside_the_vocabulary_is_refused_before_training(tmp_path):
    from accelerate import Accelerator

    from hf_vanilla.data.encoding import EncodedPairs
    from hf_vanilla.training.context import RunContext
    from hf_vanilla.training.loop import train

    from runs import run_settings

    examples = EncodedPairs.from_lists([[5, 2], [1000, 2]], [[5, 2], [6, 2]])
    run = RunContext("test", run_settings(), Accelerator(cpu=True), tmp_path, model=tiny_model().train())
    with pytest.raises(ValueError, match="token id 1000, outside the model's 1000"):
        train(run, examples)


def test_a_cpu_runs_hardware_names_the_processor_model(tmp_path):
    from hf_vanilla.training.run import cpu_model

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7B13 64-Core Processor\n")
    assert cpu_model(cpuinfo) == "AMD EPYC 7B13 64-Core Processor"
    cpuinfo.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")  # e.g. some ARM kernels: no model name
    assert cpu_model(cpuinfo) is None and cpu_model(tmp_path / "absent") is None
