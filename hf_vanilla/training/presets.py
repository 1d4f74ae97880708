"""The recipe presets (`--preset`): each a dict of `training.arguments.RunSettings` values (or of a recipe's own
settings), one of which, `model_size`, names the model's size in `hf_vanilla.SIZES`."""

# What a preset gives unless it says otherwise: the paper's learning rate, and training pairs with a side of more than
# 250 tokens, or a length ratio above 1.5, dropped (fairseq's WMT14 recipes clean their corpora with Moses'
# clean-corpus-n.perl at 1-250 tokens and ratio 1.5). A preset is a dict of `RunSettings` values (or of a recipe's
# own settings): the model's size `model_size` (a name of `hf_vanilla.SIZES`, the one place a preset gets the copy
# mechanism), `vocab_size`, `tokens_per_step` (source and target tokens per update over all processes and accumulated
# batches), `warmup_steps`, `max_steps`, `average_last` (checkpoints averaged: the paper's 5 for base, 20 for big),
# `save_every`, `eval_every` (0: no validation), and any other.
PAPER = dict(lr_scale=1.0, max_length=250, max_length_ratio=1.5)

# Each recipe's one-minute try on its offline corpus (`--preset smoke`): the tiny model, a few hundred updates, a short
# test split; it shows every step of a run (data, tokenizer, training, checkpoints, decoding, scores, card), not the
# quality of a trained model.
SMOKE = dict(
    PAPER,
    model_size="tiny",
    vocab_size=1000,
    tokens_per_step=2000,
    warmup_steps=100,
    max_steps=300,
    average_last=2,
    save_every=100,
    eval_every=100,
    eval_sentences=40,
)


# Section 5.2: ~25,000 source and 25,000 target tokens an update, 100k updates (base) or 300k (big), checkpoints
# every 10 minutes averaged (here: every 1,000 / 3,000 updates); every other preset is written as what differs.
BASE_RUN = dict(
    PAPER,
    model_size="base",
    vocab_size=37000,
    tokens_per_step=25000,
    warmup_steps=4000,
    max_steps=100_000,
    average_last=5,
    save_every=1000,
    eval_every=1000,
)
BIG_RUN = dict(BASE_RUN, model_size="big", max_steps=300_000, average_last=20, save_every=3000, eval_every=3000)

# Where the paper is silent, the translation presets do as fairseq's `transformer`: its initialisation
# (`init_scheme="fairseq"`) and its decoder starting from </s>; `docs/experiments.md` has the runs behind the choice.
FAIRSEQ_START = dict(init_scheme="fairseq", decoder_start="eos")

WMT_PRESETS = {
    "base": BASE_RUN,
    "big": BIG_RUN,
    # Section 6.1: big English-French, dropout 0.1, 32,000 word-pieces.
    "big_enfr": dict(BIG_RUN, model_size="big_enfr", vocab_size=32000),
    # The offline CPU demo on the Bible corpus: tested on verses of at most 16 words, trained on those of at most 32,
    # half the paper's learning rate; `docs/experiments.md` has the runs behind each value. On a corpus of one's own
    # the word limits are flags (--max-train-source-words, --max-source-words), the held-out splits are scored whole
    # unless --skip-invalid-size-inputs-valid-test, and every pair dropped is counted (`training.data_filters`).
    "demo": dict(
        PAPER,
        model_size="demo",
        vocab_size=4000,
        tokens_per_step=2000,
        warmup_steps=400,
        max_steps=2400,
        average_last=3,
        save_every=100,
        eval_every=600,
        lr_scale=0.5,
        max_source_words=16,
        max_train_source_words=32,
    ),
    # For tests of the recipe itself (kills, resumes, launches): the tiny model, seconds an update on a CPU.
    "tiny": dict(
        PAPER,
        model_size="tiny",
        vocab_size=1000,
        tokens_per_step=1000,
        warmup_steps=10,
        max_steps=12,
        average_last=2,
        save_every=3,
        eval_every=6,
        max_source_words=16,
        max_train_source_words=16,
    ),
    # The one-minute try (`--preset smoke`, offline: the Bible corpus): the tiny model for 300 updates, 40 test verses.
    "smoke": dict(SMOKE, max_source_words=16, max_train_source_words=16),
}
WMT_PRESETS = {name: dict(preset, **FAIRSEQ_START) for name, preset in WMT_PRESETS.items()}


PARSING_PRESETS = {
    # Section 6.3: 4 layers, d_model 1024 (16 heads, d_ff 4096), 16k BPE for WSJ only, beam 21, alpha 0.3, +300.
    # Linearized trees are 3-4 times as long as their sentences: no length-ratio filter.
    "parsing": dict(BASE_RUN, model_size="parsing", vocab_size=16000, max_length=None, max_length_ratio=None),
    # The offline CPU demo on NLTK's WSJ sample: a 128-wide parser that copies the words into its trees, written in
    # order (each label after its first child), a quarter of the paper's learning rate, as many updates as about 15
    # minutes hold (it gains from every one), the last fifth of them cooling the rate to zero, and a length penalty
    # that keeps the brackets the beam would drop; `docs/experiments.md` has the runs behind each value.
    "demo": dict(
        PAPER,
        model_size="demo_parsing",
        vocab_size=4000,
        tokens_per_step=2000,
        warmup_steps=400,
        linearization="in-order",
        max_steps=3000,
        cooldown_steps=600,
        average_last=3,
        save_every=100,
        eval_every=600,
        lr_scale=0.25,
        max_length=None,
        max_length_ratio=None,
        length_penalty=3.0,
        # Decoding freely (--no-tree-grammar) is the paper's decoding whole, its length penalty 0.3 included.
        variants={"tree_grammar": {False: dict(length_penalty=None)}},
    ),
    # The one-minute try: 15 test sentences, as the beam of 21 under the grammar takes about 2 s a sentence here.
    "smoke": dict(SMOKE, max_length=None, max_length_ratio=None, tree_leaves="words", eval_sentences=15),
}


# Summarization (`recipes/summarize.py`): documents are many times longer than their summaries, so no length filter
# or length-ratio filter drops any; long documents and summaries are truncated instead (max_source_tokens,
# max_target_tokens). The decoding is the model's `DECODING["summarization"]` row (beam 4, the GNMT length penalty, no
# repeated 3-gram, no stutter of up to 4 tokens, summaries of 1 to 64 tokens), tuned there; a preset or a flag may
# still override any of it.
# Every summarization preset's tokenizer lower-cases (and puts a space before the first word, as every summarization
# tokenizer of the recipe does): a word is then the same tokens in the summary as in the document, which copying needs.
# Their pointer-generators learn a target that the source holds by copying it (force_copy) and smooth over the
# vocabulary softmax alone (pointer_smoothing), chosen on AESLC's dev split (docs/experiments.md).
SUMMARIZATION = dict(
    PAPER,
    max_length=None,
    max_length_ratio=None,
    lowercase=True,
    force_copy=True,
    pointer_smoothing="vocabulary",
)

SUMMARIZATION_PRESETS = {
    # Transformer-base with the copy mechanism, for a GPU: 25,000 tokens an update as the paper, documents cut to 512
    # tokens and summaries to 128 (See et al. cut CNN/DailyMail's at 400 and 100 words).
    "summarization": dict(
        BASE_RUN,
        **SUMMARIZATION,
        model_size="summarization",
        vocab_size=32000,
        max_source_tokens=512,
        max_target_tokens=128,
    ),
    # For corpora of a few million tokens, such as AESLC (about 2M training tokens, on which `summarization` would run
    # 1,000 epochs), on a GPU: the `summarization_small` model, 16k BPE, documents cut to 512 tokens, validated every
    # 500 updates by greedy ROUGE-1 on 1,000 items, the best checkpoint kept and tested, training stopped after 10
    # validations without a better one.
    "small": dict(
        SUMMARIZATION,
        model_size="summarization_small",
        vocab_size=16000,
        tokens_per_step=12000,
        warmup_steps=2000,
        max_steps=50_000,
        average_last=5,
        save_every=500,
        eval_every=500,
        eval_metric_sentences=1000,
        best_checkpoint_metric="rouge1",
        final_model="best",
        patience=10,
        max_source_tokens=512,
        max_target_tokens=64,
    ),
    # The offline CPU demo on AESLC's e-mails (../shared/data/aeslc): bodies cut to 96 tokens, subjects to 32, a fixed
    # number of updates on 2 CPU cores at the paper's learning rate, the copy model's best on dev; without the copy
    # mechanism (--no-pointer-generator) a quarter of it, at which that model does not collapse to one subject as it
    # does at the paper's; validated by greedy ROUGE-1 on 300 validation e-mails (the best kept in best/), the final
    # model the average of the last three checkpoints. `docs/experiments.md` has the runs behind each value.
    "demo": dict(
        SUMMARIZATION,
        model_size="demo_summarization",
        vocab_size=4000,
        tokens_per_step=6000,
        warmup_steps=400,
        max_steps=3000,
        average_last=3,
        save_every=250,
        eval_every=500,
        eval_metric_sentences=300,
        best_checkpoint_metric="rouge1",
        max_source_tokens=96,
        max_target_tokens=32,
        length_penalty=3.0,
        variants={"pointer_generator": {False: dict(lr_scale=0.25)}},
    ),
    # For tests of the recipe itself: the tiny model with the copy mechanism, seconds on a CPU.
    "tiny": dict(
        SUMMARIZATION,
        model_size="tiny_summarization",
        vocab_size=400,
        tokens_per_step=600,
        warmup_steps=4,
        max_steps=4,
        average_last=2,
        save_every=2,
        eval_every=2,
        max_source_tokens=24,
        max_target_tokens=8,
        max_new_tokens=8,
    ),
    "smoke": dict(
        SMOKE,
        model_size="tiny_summarization",
        max_length=None,
        max_length_ratio=None,
        lowercase=True,
        max_source_tokens=96,
        max_target_tokens=32,
        max_new_tokens=16,
    ),
}
