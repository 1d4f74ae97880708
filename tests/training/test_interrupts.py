"""Stop signals in every phase: outside the training loop's updates a real signal raises `RunInterrupted` (one line,
an exit status, nothing partial written), a signal that arrives during a collective waits for it to end, and inside
training a signal during validation (its loss or its metric's decoding) ends validation at once, the update's
checkpoint saved."""

import os
import signal
from pathlib import Path

import pytest
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import set_seed

from hf_vanilla.training.collectives import StepError, agreed_failure
from hf_vanilla.training.context import RunContext
from hf_vanilla.training.interrupts import RunInterrupted, StopSignals, deferred, interrupting
from hf_vanilla.training.loop import train
from hf_vanilla.training.validation import Validation

from runs import run_settings, tiny_examples, tiny_model


def let_the_handler_run() -> None:
    """Python runs a signal's handler between bytecodes: a few of them."""
    for _ in range(1000):
        pass


def test_a_signal_raises_run_interrupted_with_the_shells_exit_status():
    with pytest.raises(RunInterrupted) as stopped, interrupting():
        os.kill(os.getpid(), signal.SIGTERM)
        let_the_handler_run()
    assert stopped.value.signal_name == "SIGTERM" and stopped.value.exit_status() == 143
    assert "nothing to resume yet: run the same command again" in stopped.value.line()
    assert RunInterrupted("SIGINT", "kept X").line() == "SIGINT received: kept X"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_a_signal_during_a_collective_waits_for_it_to_end():
    finished = []
    with pytest.raises(RunInterrupted), interrupting():
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            let_the_handler_run()
            finished.append(True)  # reached: the signal waited
    assert finished == [True]


def test_an_interruption_inside_an_agreed_block_stays_an_interruption():
    accelerator = Accelerator(cpu=True)
    with pytest.raises(RunInterrupted):  # not turned into the block's error type
        with agreed_failure(accelerator, StepError, "could not finish", catch=(OSError,)):
            raise RunInterrupted("SIGINT", "advice")


def training(tmp_path: Path, metric) -> tuple:
    """The tiny model trained on `tiny_examples` up to 12 updates, validated every 2 with `metric`."""
    set_seed(0)
    AcceleratorState._reset_state()
    accelerator = Accelerator(cpu=True)
    settings = run_settings(max_steps=12, save_every=100, eval_every=2, eval_metric_sentences=2 if metric else 0)
    examples = tiny_examples()
    validation = Validation(examples, max_tokens=64, pad_token_id=0, metric=metric)
    run = RunContext("test", settings, accelerator, tmp_path, model=tiny_model().train())
    return train(run, examples, validation), validation


@pytest.mark.parametrize("phase", ["loss", "metric"])
def test_a_signal_during_validation_ends_it_and_saves_the_updates_checkpoint(phase, tmp_path, monkeypatch):
    """A real SIGINT sent while validation computes its loss (from inside a batch) or decodes for its metric: training
    stops at that validation, whose figures are not logged, with the checkpoint of its update."""
    calls = {"metric": 0}

    def metric(model) -> dict:
        calls["metric"] += 1
        if phase == "metric" and calls["metric"] == 2:
            os.kill(os.getpid(), signal.SIGINT)
            let_the_handler_run()  # a decoding the signal interrupts
            raise AssertionError("the metric ran on after the signal")
        return {"valid_f1": 1.0}

    collate = tiny_examples().__class__.collate
    validating = {"on": False}

    def collate_and_signal(self, *args, **kwargs):
        if phase == "loss" and validating["on"]:
            validating["on"] = False
            os.kill(os.getpid(), signal.SIGINT)
        return collate(self, *args, **kwargs)

    monkeypatch.setattr(tiny_examples().__class__, "collate", collate_and_signal)
    original_call = Validation.__call__

    def call(self, accelerator, model, signals=None):
        validating["on"] = calls.setdefault("validations", 0) == 1  # the second validation, update 4
        calls["validations"] += 1
        return original_call(self, accelerator, model, signals)

    monkeypatch.setattr(Validation, "__call__", call)
    result, _ = training(tmp_path, metric if phase == "metric" else None)  # (the loss alone: no metric to stop it)
    assert result.stopped_by_signal == "SIGINT" and result.steps == 4
    assert [p.name for p in tmp_path.glob("checkpoint-*")] == ["checkpoint-00000004"]
    logged = (tmp_path / "train_log.jsonl").read_text()
    assert '"step": 2, "valid_loss"' in logged and '"step": 4, "valid_loss"' not in logged


def test_stop_signals_raise_only_inside_raising():
    signals = StopSignals()
    with signals.installed():
        os.kill(os.getpid(), signal.SIGTERM)
        let_the_handler_run()
        assert signals.received == "SIGTERM"  # recorded, not raised
        with pytest.raises(RunInterrupted):
            with signals.raising():  # received before: raises at once
                pass


def test_a_process_other_than_the_first_holds_the_signal_for_the_next_collective():
    """With several processes only the first raises; another would leave the first waiting in its next collective."""
    with interrupting(raises=False):
        os.kill(os.getpid(), signal.SIGINT)
        let_the_handler_run()
        with deferred():
            pass  # held still: no raise on leaving a collective either
    with pytest.raises(RunInterrupted), interrupting():
        os.kill(os.getpid(), signal.SIGINT)
        let_the_handler_run()
