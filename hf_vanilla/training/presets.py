"""Training hyper-parameters of each recipe preset; the model sizes themselves are `hf_vanilla.PRESETS`."""

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingPreset:
    model_preset: str
    vocab_size: int
    tokens_per_step: int  # source (and target) tokens per update, over all processes and accumulated batches
    warmup_steps: int
    max_steps: int
    average_last: int  # checkpoints averaged at the end (the paper: 5 for base, 20 for big)
    save_every: int
    lr_scale: float = 1.0
    max_source_words: int | None = None  # training and held-out pairs longer than this are dropped
    max_train_minutes: float | None = None
    eval_sentences: int | None = None  # held-out sentences translated at the end (None: the whole test split)


WMT_PRESETS = {
    # Section 5: ~25,000 source and 25,000 target tokens a step, 100k steps (base) or 300k (big), checkpoints every
    # 10 minutes averaged (here: every 1,000 / 3,000 steps).
    "base": TrainingPreset("base", 37000, 25000, 4000, 100_000, 5, 1000),
    "big": TrainingPreset("big", 37000, 25000, 4000, 300_000, 20, 3000),
    # The offline CPU demo: the Bible corpus, verses of at most 25 words, a 256-wide 3+3-layer model, 6k shared BPE,
    # small batches (2,000 tokens) for many updates, about 11 minutes of training on 2 cores, 400 held-out verses.
    "demo": TrainingPreset(
        "demo", 6000, 2000, 400, 100_000, 3, 100, lr_scale=0.5, max_source_words=25, max_train_minutes=11.0,
        eval_sentences=400,
    ),
}


PARSING_PRESETS = {
    # Section 6.3: 4 layers, d_model 1024 (16 heads, d_ff 4096), 16k BPE for WSJ only, beam 21, alpha 0.3, +300.
    "parsing": TrainingPreset("parsing", 16000, 25000, 4000, 100_000, 5, 1000),
    # The offline CPU demo on NLTK's WSJ sample: a small parser, 4k BPE, about 11 minutes of training on 2 cores.
    "demo": TrainingPreset(
        "demo_parsing", 4000, 2000, 400, 100_000, 3, 100, lr_scale=0.5, max_train_minutes=11.0,
    ),
}
