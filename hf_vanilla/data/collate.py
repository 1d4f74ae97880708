"""Pads tokenized pairs into model inputs."""

from collections.abc import Sequence

import torch


def collate_pairs(examples: Sequence[dict], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-pads `input_ids` (mask 0 on padding) and `labels` (-100 on padding). The model builds the decoder
    inputs itself by shifting the labels right behind the start token."""
    batch_size = len(examples)
    source_length = max(len(e["input_ids"]) for e in examples)
    target_length = max(len(e["labels"]) for e in examples)
    input_ids = torch.full((batch_size, source_length), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((batch_size, source_length), dtype=torch.long)
    labels = torch.full((batch_size, target_length), -100, dtype=torch.long)
    for row, example in enumerate(examples):
        source, target = example["input_ids"], example["labels"]
        input_ids[row, : len(source)] = torch.as_tensor(source)
        attention_mask[row, : len(source)] = 1
        labels[row, : len(target)] = torch.as_tensor(target)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
