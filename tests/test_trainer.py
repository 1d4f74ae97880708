"""Seq2SeqTrainer fine-tunes the model on real WMT14 pairs and the loss falls."""

import itertools

import numpy as np
from datasets import Dataset
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_vanilla.tokenization import train_shared_bpe

from runs import tiny_model


def read_lines(path, count):
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in itertools.islice(handle, count)]


def test_seq2seq_trainer_fine_tunes_tiny_model(wmt_sample, tmp_path):
    english = read_lines(wmt_sample / "train.en", 3000)
    german = read_lines(wmt_sample / "train.de", 3000)
    tokenizer = train_shared_bpe(english + german, vocab_size=1000, show_progress=False)
    pairs = [(e, g) for e, g in zip(english, german) if len(e.split()) <= 20 and len(g.split()) <= 20]
    data = Dataset.from_dict({"en": [e for e, _ in pairs], "de": [g for _, g in pairs]})
    data = data.map(
        lambda b: tokenizer(b["en"], text_target=b["de"], truncation=True, max_length=64),
        batched=True,
        remove_columns=["en", "de"],
    )
    model = tiny_model()
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=60,
        per_device_train_batch_size=16,
        gradient_accumulation_steps=2,
        learning_rate=3e-3,
        warmup_steps=5,
        logging_steps=5,
        report_to=[],
        save_strategy="no",
        predict_with_generate=True,
        per_device_eval_batch_size=8,
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Seq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=data,
        eval_dataset=data.select(range(8)),
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
        processing_class=tokenizer,
    )
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 12
    assert losses[-1] < losses[0] - 1.0, losses  # nats per token
    prediction = trainer.predict(data.select(range(8)), num_beams=2)
    tokens = np.where(prediction.predictions < 0, tokenizer.pad_token_id, prediction.predictions)
    assert all(isinstance(t, str) for t in tokenizer.batch_decode(tokens, skip_special_tokens=True))
    assert prediction.predictions.shape[0] == 8
