"""Training hyper-parameters of each recipe preset; the model sizes themselves are `hf_vanilla.PRESETS`."""

from dataclasses import dataclass

from .. import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration


def new_model(model_preset: str, tokenizer, **overrides) -> VanillaTransformerForConditionalGeneration:
    """A freshly initialised model of size `model_preset` (`hf_vanilla.PRESETS`) whose vocabulary and special tokens
    are `tokenizer`'s, decoding starting from <s>; `overrides` set any other configuration field."""
    config = VanillaTransformerConfig.from_preset(
        model_preset,
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        **overrides,
    )
    return VanillaTransformerForConditionalGeneration(config)


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
    max_source_words: int | None = None  # held-out pairs longer than this are dropped (and training pairs, by default)
    max_train_source_words: int | None = None  # training pairs longer than this are dropped (default: max_source_words)
    max_train_minutes: float | None = None

    def word_limit(self, split: str) -> int | None:
        """The most source words a pair of `split` may have (None: no limit)."""
        if split == "train" and self.max_train_source_words is not None:
            return self.max_train_source_words
        return self.max_source_words


WMT_PRESETS = {
    # Section 5: ~25,000 source and 25,000 target tokens a step, 100k steps (base) or 300k (big), checkpoints every
    # 10 minutes averaged (here: every 1,000 / 3,000 steps).
    "base": TrainingPreset("base", 37000, 25000, 4000, 100_000, 5, 1000),
    "big": TrainingPreset("big", 37000, 25000, 4000, 300_000, 20, 3000),
    # The offline CPU demo: the Bible corpus, tested on verses of at most 16 words (318 test verses) and trained on
    # those of at most 32 (22,339 training pairs; in 11 minutes: 18.6 sacreBLEU when training on the 7,438 of at most
    # 16 words, 20.4 on at most 24, 20.5 on at most 32), a 128-wide 3+3-layer model, 4k shared BPE, small batches
    # (2,000 tokens) for many updates (~3 a second), half the paper's learning rate (at the full rate, peak 4.4e-3
    # here, the encoder's output became the same for every source and the model a language model of German verses:
    # sacreBLEU 0.8), 13.5 minutes of training on 2 cores (sacreBLEU 21.3 at 2,353 updates, 13.9 minutes in all).
    "demo": TrainingPreset(
        "demo", 4000, 2000, 400, 100_000, 3, 100,
        lr_scale=0.5, max_source_words=16, max_train_source_words=32, max_train_minutes=13.5,
    ),
}


PARSING_PRESETS = {
    # Section 6.3: 4 layers, d_model 1024 (16 heads, d_ff 4096), 16k BPE for WSJ only, beam 21, alpha 0.3, +300.
    "parsing": TrainingPreset("parsing", 16000, 25000, 4000, 100_000, 5, 1000),
    # The offline CPU demo on NLTK's WSJ sample: a 128-wide 3+3-layer parser that copies the words into its trees
    # (`tree_leaves="words"`), 4k whole-piece BPE, a quarter of the paper's learning rate (at half of it: greedy F1 7.9
    # with XX leaves, and in session 2 an encoder collapse), 10 minutes of training on 2 cores and ~2 minutes of beam-21
    # decoding under the tree grammar: EVALB F1 51.4 on the 245 test sentences (decoded freely, as in the paper, an
    # earlier run of this preset gave 24.0; with XX placeholders 14.5, with POS tags 19.4).
    "demo": TrainingPreset(
        "demo_parsing", 4000, 2000, 400, 100_000, 3, 100, lr_scale=0.25, max_train_minutes=10.0,
    ),
}
