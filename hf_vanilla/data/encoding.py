"""Source/target text pairs to token ids."""

from datasets import Dataset


def encode_pairs(pairs: Dataset, tokenizer, source_lang: str, target_lang: str) -> dict[str, list[list[int]]]:
    """Token ids of every pair of a `translation` dataset: `input_ids` (source) and `labels` (target), each ending
    with </s>. Runs as a batched `datasets.map` (cached when the dataset lives on disk)."""
    encoded = pairs.map(
        lambda batch: {
            "input_ids": tokenizer([p[source_lang] for p in batch["translation"]])["input_ids"],
            "labels": tokenizer([p[target_lang] for p in batch["translation"]])["input_ids"],
        },
        batched=True,
        remove_columns=pairs.column_names,
        desc="encoding",
    )
    return {"input_ids": encoded["input_ids"], "labels": encoded["labels"]}
