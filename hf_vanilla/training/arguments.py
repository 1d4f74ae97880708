"""The command line both recipes share, and its resolution against a preset: every hyper-parameter of the paper can be
given, and whatever is not given comes from the preset, in one place (`resolve`)."""

import dataclasses
from dataclasses import dataclass, field

from .presets import TrainingPreset


@dataclass
class RecipeArguments:
    """What both recipes take. `None` means "the preset's value" (or, for `mixed_precision`, Accelerate's)."""

    preset: str = field(default="demo", metadata={"help": "The recipe's preset (see --help of each recipe)."})
    output_dir: str | None = field(default=None, metadata={"help": "Checkpoints, tokenizer, logs, results.json."})
    # The run
    max_steps: int | None = field(default=None, metadata={"help": "Updates to run (default: the preset's)."})
    max_train_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop training after this many minutes instead (checked at every --log-every updates)."},
    )
    max_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Padded source (and target) tokens per batch and process. Default: the preset's tokens per "
            "update divided by processes x update-freq (the paper: 25,000 per update)."
        },
    )
    update_freq: int = field(default=1, metadata={"help": "Batches accumulated per update (simulates more GPUs)."})
    seed: int = field(default=1, metadata={"help": "Seed of initialisation, batching and dropout."})
    mixed_precision: str | None = field(
        default=None,
        metadata={"help": "no, fp16 or bf16. Default: what `accelerate launch` / `accelerate config` set."},
    )
    torch_compile: bool = field(
        default=False,
        metadata={
            "help": "Compile the model (torch.compile, inductor) unless `accelerate launch --dynamo_backend` chose a "
            "backend; under any backend, batch lengths are padded to multiples of 8 and results.json counts the "
            "graphs built."
        },
    )
    report_to: str | None = field(default=None, metadata={"help": "An Accelerate tracker, e.g. tensorboard."})
    resume: bool = field(default=False, metadata={"help": "Continue from the newest complete checkpoint."})
    init_from: str | None = field(
        default=None,
        metadata={"help": "Start from this hf_vanilla model (a folder or Hub id) and its tokenizer: fine-tuning."},
    )
    eval_only: bool = field(
        default=False,
        metadata={
            "help": "Train nothing: score --init-from's model on --eval-split, write results and the card to "
            "--output-dir."
        },
    )
    # The paper's hyper-parameters (section 5), each defaulting to the preset
    vocab_size: int | None = field(default=None, metadata={"help": "Shared BPE vocabulary size."})
    lr_scale: float | None = field(
        default=None, metadata={"help": "Factor on the paper's learning rate d_model^-0.5 * min(n^-0.5, n w^-1.5)."}
    )
    learning_rate: float | None = field(
        default=None, metadata={"help": "Peak learning rate (at the end of warmup); sets --lr-scale instead."}
    )
    warmup_steps: int | None = field(default=None, metadata={"help": "Warmup updates w (the paper: 4,000)."})
    dropout: float | None = field(default=None, metadata={"help": "P_drop on sub-layer outputs and embeddings."})
    attention_dropout: float | None = field(default=None, metadata={"help": "Dropout on attention weights."})
    label_smoothing: float | None = field(default=None, metadata={"help": "epsilon_ls (the paper: 0.1)."})
    loss_chunk_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Compute the output projection and loss this many target positions at a time (recomputed in "
            "the backward pass), never the whole batch's logits. Default: the model's (0: all at once)."
        },
    )
    num_beams: int | None = field(default=None, metadata={"help": "Beam size of the final decoding."})
    length_penalty: float | None = field(default=None, metadata={"help": "GNMT length penalty alpha."})
    max_length_offset: int | None = field(default=None, metadata={"help": "Maximum output = source length + this."})
    # Data
    max_length: int | None = field(
        default=None, metadata={"help": "Training pairs with a side longer than this many tokens are dropped."}
    )
    max_length_ratio: float | None = field(
        default=None,
        metadata={
            "help": "Training pairs whose longer side has more than this times the tokens of the shorter are "
            "dropped (0: no ratio filter)."
        },
    )
    # Checkpoints and evaluation
    save_every: int | None = field(default=None, metadata={"help": "Updates between checkpoints."})
    keep_last: int | None = field(default=None, metadata={"help": "Checkpoints kept (default: those averaged)."})
    average_last: int | None = field(default=None, metadata={"help": "Checkpoints averaged into the final model."})
    log_every: int = field(default=50, metadata={"help": "Updates between log lines."})
    eval_every: int | None = field(
        default=None,
        metadata={
            "help": "Updates between validation losses (train_log.jsonl, trackers); 0: none. The best "
            "checkpoint by validation loss is kept in OUTPUT_DIR/best."
        },
    )
    eval_metric_sentences: int = field(
        default=0,
        metadata={
            "help": "Also decode this many validation sentences (greedy) at each validation and score them "
            "(BLEU or EVALB F1)."
        },
    )
    eval_split: str = field(default="test", metadata={"help": "Held-out split scored at the end (test, validation)."})
    eval_sentences: int | None = field(default=None, metadata={"help": "Score only the first N held-out sentences."})
    push_to_hub: str | None = field(default=None, metadata={"help": "Hub repo id to publish the final model to."})


@dataclass(frozen=True)
class RunSettings:
    """Every setting of a run once the command line has been resolved against its preset."""

    preset: str
    model_preset: str
    vocab_size: int
    max_steps: int
    max_train_minutes: float | None
    tokens_per_step: int
    max_tokens: int | None  # per batch and process, when given; else derived from tokens_per_step
    update_freq: int
    warmup_steps: int
    lr_scale: float
    model_overrides: dict  # configuration fields given on the command line (dropout, label smoothing, ...)
    decoding: dict  # generation settings given on the command line (num_beams, length_penalty, max_length_offset)
    max_length: int | None
    max_length_ratio: float | None
    max_source_words: int | None
    max_train_source_words: int | None
    save_every: int
    keep_last: int
    average_last: int
    log_every: int
    eval_every: int
    eval_metric_sentences: int
    seed: int

    def word_limit(self, split: str) -> int | None:
        """The most source words a pair of `split` may have (None: no limit)."""
        if split == "train" and self.max_train_source_words is not None:
            return self.max_train_source_words
        return self.max_source_words

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def peak_learning_rate(d_model: int, warmup_steps: int, lr_scale: float = 1.0) -> float:
    """The paper's learning rate at the end of warmup: lr_scale * d_model^-0.5 * warmup^-0.5."""
    return lr_scale * d_model**-0.5 * warmup_steps**-0.5


def resolve(args: RecipeArguments, preset: TrainingPreset, d_model: int) -> RunSettings:
    """`args` over `preset`: a value given on the command line wins, the preset gives the rest. `d_model` turns
    --learning-rate into the schedule's scale. Raises ValueError for values that cannot work."""
    problems = []
    if args.lr_scale is not None and args.learning_rate is not None:
        problems.append("give --lr-scale or --learning-rate, not both")
    for name in (
        "max_steps",
        "max_tokens",
        "update_freq",
        "vocab_size",
        "warmup_steps",
        "num_beams",
        "save_every",
        "keep_last",
        "average_last",
        "log_every",
        "max_length",
    ):
        value = getattr(args, name)
        if value is not None and value < 1:
            problems.append(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    for name in ("eval_every", "eval_metric_sentences", "max_length_offset", "loss_chunk_tokens"):
        value = getattr(args, name)
        if value is not None and value < 0:
            problems.append(f"--{name.replace('_', '-')} must not be negative, got {value}")
    if args.max_train_minutes is not None and args.max_train_minutes <= 0:
        problems.append(f"--max-train-minutes must be positive, got {args.max_train_minutes}")
    if args.max_length_ratio is not None and 0 < args.max_length_ratio < 1:
        problems.append(f"--max-length-ratio must be at least 1 (or 0: none), got {args.max_length_ratio}")
    if problems:
        raise ValueError("; ".join(problems))

    def pick(name: str, default):
        value = getattr(args, name)
        return default if value is None else value

    warmup = pick("warmup_steps", preset.warmup_steps)
    lr_scale = pick("lr_scale", preset.lr_scale)
    if args.learning_rate is not None:
        lr_scale = args.learning_rate / peak_learning_rate(d_model, warmup)
    average_last = pick("average_last", preset.average_last)
    model_overrides = {
        name: getattr(args, name)
        for name in ("dropout", "attention_dropout", "label_smoothing", "loss_chunk_tokens")
        if getattr(args, name) is not None
    }
    decoding = {
        name: getattr(args, name)
        for name in ("num_beams", "length_penalty", "max_length_offset")
        if getattr(args, name) is not None
    }
    ratio = pick("max_length_ratio", preset.max_length_ratio)
    keep_last = pick("keep_last", max(average_last, 1))
    if keep_last < average_last:
        raise ValueError(f"--keep-last {keep_last} keeps fewer checkpoints than --average-last {average_last}")
    return RunSettings(
        preset=args.preset,
        model_preset=preset.model_preset,
        vocab_size=pick("vocab_size", preset.vocab_size),
        # A time budget alone replaces the preset's number of updates.
        max_steps=pick("max_steps", preset.max_steps if args.max_train_minutes is None else 10**9),
        max_train_minutes=args.max_train_minutes,
        tokens_per_step=preset.tokens_per_step,
        max_tokens=args.max_tokens,
        update_freq=args.update_freq,
        warmup_steps=warmup,
        lr_scale=lr_scale,
        model_overrides=model_overrides,
        decoding=decoding,
        max_length=pick("max_length", preset.max_length),
        max_length_ratio=ratio or None,
        max_source_words=preset.max_source_words,
        max_train_source_words=preset.max_train_source_words,
        save_every=pick("save_every", preset.save_every),
        keep_last=keep_last,
        average_last=average_last,
        log_every=args.log_every,
        eval_every=pick("eval_every", preset.eval_every),
        eval_metric_sentences=args.eval_metric_sentences,
        seed=args.seed,
    )
