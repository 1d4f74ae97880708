"""Validation during training: the loss on the validation split, computed by all processes together, and optionally a
task metric (BLEU, EVALB F1) of greedy decodings of a few validation sentences."""

import math
from collections.abc import Callable
from contextlib import nullcontext

import torch
from accelerate import Accelerator

from ..data.batching import TokenBudgetBatchSampler
from ..data.encoding import EncodedPairs
from ..modeling_vanilla import label_smoothed_cross_entropy
from .collectives import StepError, agreed_failure, any_process, broadcast_value
from .interrupts import StopSignals


class Validation:
    """Computes `valid_loss` (label-smoothed, as the training loss), `valid_nll_loss` and `valid_ppl` (per target
    token) over every pair of `examples`, each process taking every `num_processes`-th batch; `metric(model)`, when
    given, adds its own figures (keys starting with `valid_`), computed on the main process."""

    def __init__(
        self,
        examples: EncodedPairs,
        max_tokens: int,
        pad_token_id: int,
        metric: Callable[[torch.nn.Module], dict] | None = None,
    ):
        if not len(examples):
            raise ValueError("the validation split is empty")
        longest = int(max(examples.source_lengths.max(), examples.target_lengths.max()))
        sampler = TokenBudgetBatchSampler(
            examples.source_lengths, examples.target_lengths, max(max_tokens, longest), shuffle=False
        )
        self.batches = sampler.all_batches(0)
        self.examples, self.pad_token_id, self.metric = examples, pad_token_id, metric

    @torch.no_grad()
    def __call__(self, accelerator: Accelerator, model, signals: StopSignals | None = None) -> dict | None:
        """The figures; None when a stop signal (recorded by `signals`, agreed on by every process between batches)
        ends validation early. A signal during the metric's decoding raises `RunInterrupted` on every process."""
        was_training = model.training
        model.eval()
        mine = self.batches[accelerator.process_index :: accelerator.num_processes]
        # Every process runs as many forward passes (sharded models gather weights together); the extra ones count 0.
        rounds = math.ceil(len(self.batches) / accelerator.num_processes)
        totals = torch.zeros(3, dtype=torch.float64, device=accelerator.device)
        epsilon = accelerator.unwrap_model(model).config.label_smoothing
        for index in range(rounds):
            if signals is not None and any_process(accelerator, signals.received is not None):
                return None
            batch = mine[index] if index < len(mine) else self.batches[0]
            weight = 1.0 if index < len(mine) else 0.0
            inputs = {k: v.to(accelerator.device) for k, v in self.examples.collate(batch, self.pad_token_id).items()}
            logits = model(
                input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], labels=inputs["labels"]
            ).logits
            labels = inputs["labels"]
            smoothed = label_smoothed_cross_entropy(logits, labels, epsilon, self.pad_token_id, num_items_in_batch=1)
            nll = label_smoothed_cross_entropy(logits, labels, 0.0, self.pad_token_id, num_items_in_batch=1)
            tokens = (labels != -100).sum()
            totals += weight * torch.stack([smoothed.double(), nll.double(), tokens.double()])
        totals = accelerator.reduce(totals, reduction="sum")
        smoothed, nll, tokens = (float(value) for value in totals)
        figures = {
            "valid_loss": round(smoothed / tokens, 4),
            "valid_nll_loss": round(nll / tokens, 4),
            "valid_ppl": round(math.exp(min(nll / tokens, 50)), 2),
        }
        if self.metric is not None:
            scores = {}
            stoppable = signals.raising() if signals is not None else nullcontext()
            with agreed_failure(accelerator, StepError, "the validation metric failed", catch=()):
                if accelerator.is_main_process:
                    with stoppable:
                        scores = self.metric(accelerator.unwrap_model(model))
            figures.update(broadcast_value(accelerator, scores))
        model.train(was_training)
        return figures
