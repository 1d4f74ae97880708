"""The training loop (`hf_vanilla.training.loop`): exact resume, time budgets, torch.compile, no read-back from the
device in an update, the vocabulary checked before training, the hardware recorded."""

import json

import pytest
import torch

from hf_vanilla.data.encoding import EncodedPairs
from hf_vanilla.training.checkpoints import list_checkpoints

from runs import run_loop, tiny_model


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


def test_a_time_budget_alone_bounds_the_run_read_after_every_update(tmp_path):
    """--max-train-minutes without --max-steps: no number of updates at all; the budget, read after every update
    (not only at log lines: --log-every 1000 here), ends the run after its first update, which is checkpointed;
    and before a --max-steps that would come later."""
    result, _ = run_loop(tmp_path / "alone", None, max_train_minutes=1e-9, log_every=1000)
    assert result.steps == 1 and [p.name for p in list_checkpoints(tmp_path / "alone")] == ["checkpoint-00000001"]
    result, _ = run_loop(tmp_path / "both", 5, max_train_minutes=1e-9, log_every=1000)
    assert result.steps == 1


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

    from hf_vanilla.training.context import RunContext
    from hf_vanilla.training.loop import train

    from runs import run_settings

    examples = EncodedPairs.from_lists([[5, 2], [1000, 2]], [[5, 2], [6, 2]])
    run = RunContext("test", run_settings(), Accelerator(cpu=True), tmp_path, model=tiny_model().train())
    with pytest.raises(ValueError, match="token id 1000, outside the model's 1000"):
        train(run, examples)


def test_a_cpu_runs_hardware_names_the_processor_model(tmp_path):
    from hf_vanilla.publishing import cpu_model

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7B13 64-Core Processor\n")
    assert cpu_model(cpuinfo) == "AMD EPYC 7B13 64-Core Processor"
    cpuinfo.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")  # e.g. some ARM kernels: no model name
    assert cpu_model(cpuinfo) is None and cpu_model(tmp_path / "absent") is None
