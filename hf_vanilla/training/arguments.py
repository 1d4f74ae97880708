"""The one schema of a run's settings, `RunSettings`: every flag the recipes share and every value a preset gives,
and `resolve`, which merges the command line over the recipe's preset and checks the result."""

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from ..decoding_settings import SETTINGS, least_values
from ..flag_bounds import bound_problems
from ..hub_reach import cached_dataset, cached_model, offline, unreachable_line
from ..model_paths import is_local_path
from .host_memory import HOST_MALLOC_CHOICES
from .preflight import PreflightError

# A check run (fewer updates than its preset: a set-up tried) decodes at most this many held-out items at the end,
# and validates on at most this many decoded items, unless the command line says how many.
CHECK_RUN_ITEMS = 40


def setting(help: str, default=None, aliases: tuple[str, ...] = ()) -> dataclasses.Field:
    """A field of `RunSettings` (or of a recipe's subclass): a flag with `help`, also spelt as each of `aliases`
    (another tool's name for it, e.g. fairseq's)."""
    return field(default=default, metadata={"help": help, "aliases": aliases})


def decoding_setting(name: str, task: str | None = None) -> dataclasses.Field:
    """A flag for the decoding setting `name` (`decoding_settings.SETTINGS`), with its help and its default for a
    model of `task` (None: any task's): the preset's, else the model's generation config."""
    return setting(SETTINGS[name].help_for(task, "the preset's, else the model's generation config"))


def from_preset(help: str) -> dataclasses.Field:
    """A field only the preset sets (not a flag)."""
    return field(default=None, init=False, metadata={"help": help})


@dataclass
class RunSettings:
    """Every setting of a run. A recipe subclasses it with its own flags (its data, its decoding); the command line
    (`training.flags.parse_settings`, a flag a field) fills them, `None` meaning "the preset's"; `resolve` then fills
    every `None` from the recipe's preset, a dict of field values (`training.presets`), and checks the values."""

    # The fields that, when set, override the model's configuration field of the same name, or its generation
    # config's; and the smallest value of some fields. A recipe's subclass extends them with its own fields.
    MODEL_CONFIG: ClassVar[tuple[str, ...]] = (
        *("d_model", "encoder_layers", "decoder_layers", "num_attention_heads", "d_ff", "init_scheme"),
        *("dropout", "attention_dropout", "label_smoothing", "loss_chunk_tokens"),
    )
    # The model configuration fields that decide the model's shape and first weights: a new model's alone (refused
    # with --init-from).
    ARCHITECTURE: ClassVar[tuple[str, ...]] = MODEL_CONFIG[:6]
    GENERATION_CONFIG: ClassVar[tuple[str, ...]] = ("num_beams", "length_penalty", "max_length_offset")
    AT_LEAST: ClassVar[dict[str, int]] = {
        **least_values(GENERATION_CONFIG),
        **dict.fromkeys(("max_steps", "max_tokens", "update_freq", "vocab_size", "warmup_steps"), 1),
        **dict.fromkeys(("save_every", "keep_last", "average_last", "log_every", "max_length"), 1),
        **dict.fromkeys(("max_train_samples", "d_model", "encoder_layers", "decoder_layers"), 1),
        **dict.fromkeys(("num_attention_heads", "d_ff", "max_source_length", "max_target_length"), 1),
        **dict.fromkeys(("eval_every", "eval_metric_sentences", "loss_chunk_tokens", "eval_sentences"), 0),
        **dict.fromkeys(("max_source_words", "max_train_source_words", "cooldown_steps"), 0),
        "patience": 0,
    }
    # The fields (source side, target side) whose values cut longer sequences to that many tokens, </s> kept, in every
    # split the run encodes (`training.run.encoded_split`, the counts recorded in results.json); None: no truncation.
    TRUNCATION: ClassVar[tuple[str, str] | None] = None
    # The recipe's validation metrics, which --best-checkpoint-metric may name: metric -> the figure of its
    # validation metric function (e.g. {"bleu": "valid_sacrebleu"}); "loss" (valid_loss) is every recipe's.
    METRICS: ClassVar[dict[str, str]] = {}
    # What a user without the Hub can give instead of the recipe's Hub corpora (`hub_reach`), where it reads any.
    OFFLINE_CORPORA: ClassVar[str] = ""
    # Whether the run counts, for each split it encodes, how many target tokens its source holds (the ceiling of a
    # copy mechanism, `data.copyable`), logged and recorded in results.json.
    COUNT_COPYABLE: ClassVar[bool] = False

    preset: str = setting("The recipe's preset (see --help of each recipe).", "demo")
    output_dir: str | None = setting("Checkpoints, tokenizer, logs, results.json.")
    # The run
    max_steps: int | None = setting("Updates to run (default: the preset's; none with --max-train-minutes alone).")
    max_train_minutes: float | None = setting(
        "Stop training after this many minutes instead (checked at every --log-every updates)."
    )
    max_tokens: int | None = setting(
        "Padded source (and target) tokens per batch and process. Default: the preset's tokens per update divided "
        "by processes x update-freq (the paper: 25,000 per update).",
    )
    update_freq: int = setting("Batches accumulated per update (simulates more GPUs).", 1)
    seed: int = setting("Seed of initialisation, batching and dropout.", 1)
    mixed_precision: str | None = setting(
        "no, fp16 or bf16. Default: what `accelerate launch` / `accelerate config` set."
    )
    torch_compile: bool = setting(
        "Compile the model (torch.compile, inductor) unless `accelerate launch --dynamo_backend` chose a backend; "
        "under any backend, batch lengths are padded to multiples of 8 and results.json counts the graphs built.",
        False,
    )
    host_malloc: str = setting(
        "A CPU run's memory allocation: reuse (glibc's malloc keeps freed memory for the next update instead of "
        "mapping large blocks anew: the same figures with far fewer page faults, docs/experiments.md) or system "
        "(malloc's defaults). results.json records the one in force.",
        "reuse",
    )
    report_to: str | None = setting("An Accelerate tracker, e.g. tensorboard.")
    resume: bool = setting("Continue the output folder's run from its newest complete checkpoint.", False)
    overwrite_output_dir: bool = setting(
        "Remove the run that the output folder holds (its checkpoints, logs, results and models) before starting; "
        "without it (or --resume), a folder holding another run is refused.",
        False,
    )
    init_from: str | None = setting(
        "Start from this hf_vanilla model (a folder or Hub id) and its tokenizer: fine-tuning."
    )
    eval_only: bool = setting(
        "Train nothing: score --init-from's model on --eval-split, write results and the card to --output-dir.", False
    )
    # The model's size (Table 3's N, d_model, h, d_ff), each defaulting to the preset's model size; a new model's only
    d_model: int | None = setting("d_model, the width of every sub-layer's output and of the embeddings.")
    encoder_layers: int | None = setting("N of the encoder: its layers.")
    decoder_layers: int | None = setting("N of the decoder: its layers.")
    num_attention_heads: int | None = setting("h, the attention heads (d_model must be a multiple of it).")
    d_ff: int | None = setting("d_ff, the inner size of the feed-forward sub-layers.")
    init_scheme: str | None = setting(
        "How the new model's projections are drawn (the paper gives none): normal (N(0, 0.02)) or fairseq (its "
        "`transformer`'s Xavier-uniform attention projections, PyTorch's default elsewhere). Default: the preset's, "
        "else normal."
    )
    decoder_start: str | None = setting(
        "The new model's first decoder input, before the target shifted right (the paper names none): bos (<s>) or "
        "eos (</s>, fairseq's). Default: the preset's, else bos."
    )
    # The paper's hyper-parameters (section 5), each defaulting to the preset
    vocab_size: int | None = setting("Shared BPE vocabulary size.")
    lr_scale: float | None = setting("Factor on the paper's learning rate d_model^-0.5 * min(n^-0.5, n w^-1.5).")
    learning_rate: float | None = setting("Peak learning rate (at the end of warmup); sets --lr-scale instead.")
    warmup_steps: int | None = setting("Warmup updates w (the paper: 4,000).")
    cooldown_steps: int | None = setting(
        "The learning rate falls linearly to zero over the last K of --max-steps updates, after the paper's schedule "
        "(0: the paper's schedule to the end). Default: the preset's, cut to a shorter run's updates (none for "
        "--max-train-minutes alone), else 0."
    )
    adam_betas: str | None = setting("Adam's beta1,beta2 (the paper: 0.9,0.98; fairseq's '(0.9, 0.98)' is read too).")
    adam_eps: float | None = setting("Adam's epsilon (the paper: 1e-9).")
    dropout: float | None = setting("P_drop on sub-layer outputs and embeddings.")
    attention_dropout: float | None = setting("Dropout on attention weights.")
    label_smoothing: float | None = setting("epsilon_ls (the paper: 0.1).")
    loss_chunk_tokens: int | None = setting(
        "Compute the output projection and loss this many target positions at a time (recomputed in the backward "
        "pass), never the whole batch's logits. Default: the model's (0: all at once).",
    )
    # The final decoding's (validation's is greedy)
    num_beams: int | None = decoding_setting("num_beams")
    length_penalty: float | None = decoding_setting("length_penalty")
    max_length_offset: int | None = decoding_setting("max_length_offset")
    # Data
    max_train_source_words: int | None = setting(
        "Translation: training pairs whose source has more words (split at white space) are dropped before the "
        "tokenizer is trained; 0: no limit. Default: the preset's (demo 32, smoke 16), else none."
    )
    max_source_words: int | None = setting(
        "Translation: held-out pairs (validation, test) whose source has more words are dropped, on a preset's own "
        "demo corpus as its figures were measured; on any other corpus only with "
        "--skip-invalid-size-inputs-valid-test. 0: no limit. Default: the preset's (demo and smoke 16), else none."
    )
    skip_invalid_size_inputs_valid_test: bool = setting(
        "Translation: filter the held-out splits (validation, test) of a corpus of one's own too (fairseq's flag): "
        "pairs with an empty side or over --max-source-words are dropped, and counted. Without it they are decoded "
        "and scored whole.",
        False,
    )
    max_train_samples: int | None = setting(
        "Train on the first N training pairs only (after the word limits, before the token-length filters)."
    )
    max_length: int | None = setting(
        "Training pairs with a side longer than this many tokens are dropped (the paper's presets: 250, as Moses' "
        "clean-corpus-n). Held-out pairs are never dropped by their tokens."
    )
    max_source_length: int | None = setting(
        "Training pairs whose source has more tokens are dropped (transformers' run_translation flag, whose pairs "
        "are cut instead: a cut pair no longer translates its source; fairseq's --max-source-positions is read "
        "too). Default: --max-length.",
        aliases=("--max-source-positions",),
    )
    max_target_length: int | None = setting(
        "Training pairs whose target has more tokens are dropped (fairseq's --max-target-positions is read too). "
        "Default: --max-length.",
        aliases=("--max-target-positions",),
    )
    max_length_ratio: float | None = setting(
        "Training pairs whose longer side has more than this times the tokens of the shorter are dropped (0: no "
        "ratio filter)."
    )
    # Checkpoints and evaluation
    save_every: int | None = setting("Updates between checkpoints.")
    keep_last: int | None = setting("Checkpoints kept (default: those averaged).")
    average_last: int | None = setting("Checkpoints averaged into the final model.")
    log_every: int = setting("Updates between log lines.", 50)
    eval_every: int | None = setting(
        "Updates between validation losses (train_log.jsonl, trackers); 0: none. The best checkpoint (by "
        "--best-checkpoint-metric) is kept in OUTPUT_DIR/best.",
    )
    eval_metric_sentences: int | None = setting(
        "Also decode this many validation items (greedy) at each validation and score them (BLEU, EVALB F1 or "
        "ROUGE). Default: the preset's, else 0."
    )
    best_checkpoint_metric: str | None = setting(
        "The validation figure that chooses OUTPUT_DIR/best (fairseq's --best-checkpoint-metric): loss, or the "
        "recipe's metric of greedy decodings of --eval-metric-sentences validation items (bleu for translation, f1 "
        "for parsing, rouge1, rouge2, rougeL or rougeLsum for summarization). Default: the preset's, else loss."
    )
    final_model: str | None = setting(
        "The model that is tested and saved as OUTPUT_DIR/final: average (of the last --average-last checkpoints, "
        "the paper's) or best (OUTPUT_DIR/best, by --best-checkpoint-metric). Default: the preset's, else average."
    )
    patience: int | None = setting(
        "Stop training once --best-checkpoint-metric has not improved for this many validations in a row "
        "(fairseq's --patience; 0: never). Default: the preset's, else 0."
    )
    eval_split: str = setting("Held-out split scored at the end (test, validation).", "test")
    eval_sentences: int | None = setting(
        "Decode and score only the first N held-out items at the end; 0: all of them. Default: the preset's, else "
        f"all, but at most {CHECK_RUN_ITEMS} in a check run (--max-steps under the preset's)."
    )
    push_to_hub: str | None = setting("Hub repo id to publish the final model to.")
    # Set by the preset alone
    model_size: str | None = from_preset("The model's size: a name of `hf_vanilla.SIZES`.")
    tokens_per_step: int | None = from_preset(
        "Source (and target) tokens per update, over all processes and accumulated batches."
    )
    check_run: bool | None = field(
        default=None,
        init=False,
        metadata={"help": "Whether the run trains fewer updates than its preset (`resolve`): a check of a set-up."},
    )

    def word_limit(self, split: str) -> int | None:
        """The most source words a pair of `split` may have (None: no limit): --max-train-source-words for training
        pairs, --max-source-words for held-out ones (0: no limit)."""
        return (self.max_train_source_words if split == "train" else self.max_source_words) or None

    def filters_held_out(self, demo_corpus: bool) -> bool:
        """Whether held-out pairs are filtered at all (an empty side, --max-source-words): on a preset's own demo
        corpus (`demo_corpus`), as its figures were measured; on any other corpus only with
        --skip-invalid-size-inputs-valid-test, so that a user's test split is scored whole unless they ask."""
        return demo_corpus or self.skip_invalid_size_inputs_valid_test

    def hub_dataset(self) -> str | None:
        """The corpus the run reads from the Hub, if any (a recipe with Hub corpora says which)."""
        return None

    def hub_names(self) -> list[str]:
        """What the run reads from or writes to the Hugging Face Hub: its corpus, --init-from's model where it is no
        path here, --push-to-hub's repo."""
        read = [name for name in (self.hub_dataset(), self.init_from) if name and not is_local_path(name)]
        return read + ([self.push_to_hub] if self.push_to_hub else [])

    def offline_problem(self) -> str | None:
        """Where the libraries run offline (`hub_reach.offline`): the one line for the Hub corpus or --init-from model
        the run reads that no cache holds, or for --push-to-hub, or None. Standard library only: told before anything
        loads."""
        if not offline():
            return None
        dataset, model = self.hub_dataset(), self.init_from
        if dataset and not is_local_path(dataset) and not cached_dataset(dataset):
            return unreachable_line(dataset, self.OFFLINE_CORPORA)
        if model and not is_local_path(model) and not cached_model(model):
            return f"--init-from {model}: the Hugging Face Hub is out of reach (offline) and no copy of it is cached"
        if self.push_to_hub:
            return (
                f"--push-to-hub {self.push_to_hub}: the Hugging Face Hub is out of reach (offline); train without it "
                "and upload the run later with `hf-vanilla push RUN_DIR REPO_ID`"
            )
        return None

    @property
    def pair_token_limits(self) -> tuple[int | None, int | None]:
        """The most source and target tokens a training pair may have (</s> not counted; None: no limit):
        --max-source-length and --max-target-length, each at most --max-length."""

        def limit(side: int | None) -> int | None:
            given = [value for value in (side, self.max_length) if value]
            return min(given) if given else None

        return limit(self.max_source_length), limit(self.max_target_length)

    @property
    def model_overrides(self) -> dict:
        """The model configuration fields set on the command line (dropout, label smoothing, ...)."""
        return self._given(self.MODEL_CONFIG)

    @property
    def decoding(self) -> dict:
        """The generation settings set on the command line (num_beams, length_penalty, max_length_offset, ...)."""
        return self._given(self.GENERATION_CONFIG)

    @property
    def token_limits(self) -> tuple[int | None, int | None]:
        """The most source and target tokens (</s> counted) a pair keeps in encoding (`TRUNCATION`): None, no limit."""
        if self.TRUNCATION is None:
            return None, None
        return getattr(self, self.TRUNCATION[0]), getattr(self, self.TRUNCATION[1])

    @property
    def betas(self) -> tuple[float, float]:
        """--adam-betas as two numbers."""
        return parse_betas(self.adam_betas)

    def _given(self, names: tuple[str, ...]) -> dict:
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def as_dict(self) -> dict:
        """Every setting (results.json's `training_preset`), with the model and decoding overrides grouped."""
        return {**dataclasses.asdict(self), "model_overrides": self.model_overrides, "decoding": self.decoding}


Settings = TypeVar("Settings", bound=RunSettings)  # a recipe's own subclass

# What the run uses where neither the command line nor the preset gives a value.
DEFAULTS = dict(
    best_checkpoint_metric="loss",
    final_model="average",
    patience=0,
    eval_metric_sentences=0,
    adam_betas="0.9,0.98",  # the paper's Adam (section 5.3)
    adam_eps=1e-9,
    decoder_start="bos",
    cooldown_steps=0,
)
DECODER_STARTS = ("bos", "eos")
FINAL_MODELS = ("average", "best")
# A recipe preset's keys under their former names (a recipe of one's own written before the rename): read as the new.
RENAMED_PRESET_KEYS = {"model_preset": "model_size"}

# The values every preset must give (unless the command line does); max_steps may be left out by --max-train-minutes.
REQUIRED = (
    "model_size",
    "vocab_size",
    "tokens_per_step",
    "warmup_steps",
    "average_last",
    "save_every",
    "eval_every",
)


def best_checkpoint_problems(settings: RunSettings) -> list[str]:
    """What makes --best-checkpoint-metric, --final-model and --patience unusable together with the other settings
    (each one line), checked before any data is read."""
    problems = []
    metrics = ["loss", *settings.METRICS]
    if settings.best_checkpoint_metric not in metrics:
        problems.append(
            f"--best-checkpoint-metric must be one of {', '.join(metrics)}, got {settings.best_checkpoint_metric!r}"
        )
    elif settings.best_checkpoint_metric != "loss" and not settings.eval_metric_sentences:
        problems.append(
            f"--best-checkpoint-metric {settings.best_checkpoint_metric} decodes validation items: give "
            "--eval-metric-sentences N"
        )
    if settings.final_model not in FINAL_MODELS:
        problems.append(f"--final-model must be one of {', '.join(FINAL_MODELS)}, got {settings.final_model!r}")
    needs_validation = [
        flag
        for flag, used in (
            ("--final-model best", settings.final_model == "best"),
            ("--patience", bool(settings.patience)),
        )
        if used
    ]
    if needs_validation and settings.eval_every == 0 and not settings.eval_only:
        verb = "need" if len(needs_validation) > 1 else "needs"
        problems.append(f"{' and '.join(needs_validation)} {verb} validation: give --eval-every N")
    return problems


def parse_betas(text: str) -> tuple[float, float]:
    """Adam's two betas from "0.9,0.98", "0.9 0.98" or fairseq's "(0.9, 0.98)"; a `ValueError` naming what is
    wrong."""
    parts = text.strip().strip("()[]").replace(",", " ").split()
    try:
        betas = tuple(float(part) for part in parts)
    except ValueError:
        betas = ()
    if len(betas) != 2 or not all(0 <= beta < 1 for beta in betas):
        raise ValueError(f"--adam-betas must be two numbers in [0, 1) such as 0.9,0.98, got {text!r}")
    return betas


def optimizer_problems(settings: RunSettings) -> list[str]:
    """What is wrong with --adam-betas, --adam-eps and --cooldown-steps (each one line)."""
    problems = []
    try:
        parse_betas(settings.adam_betas)
    except ValueError as error:
        problems.append(str(error))
    if not settings.adam_eps > 0:
        problems.append(f"--adam-eps must be positive, got {settings.adam_eps}")
    if settings.cooldown_steps and settings.max_steps is None:
        problems.append("--cooldown-steps ends at --max-steps: give --max-steps, not --max-train-minutes alone")
    elif settings.cooldown_steps and settings.cooldown_steps > settings.max_steps:
        problems.append(f"--cooldown-steps {settings.cooldown_steps} is more than --max-steps {settings.max_steps}")
    return problems


@dataclass
class CopySettings(RunSettings):
    """The copy mechanism's flags, for a recipe whose targets repeat their sources' tokens (summaries, trees over the
    input words): `None` is the preset's model size's."""

    pointer_generator: bool | None = setting(
        "The copy mechanism of pointer-generator networks (--no-pointer-generator: the plain Transformer). Default: "
        "the preset's model size's."
    )
    pointer_smoothing: str | None = setting(
        "What label smoothing spreads its epsilon over in a pointer-generator: mixture (the final distribution) or "
        "vocabulary (the vocabulary softmax only, which leaves p_gen to the targets). Default: the preset's."
    )
    force_copy: bool | None = setting(
        "A target token that its source holds is learnt by copying it only (OpenNMT-py's -copy_attn_force). "
        "Default: the preset's."
    )
    MODEL_CONFIG = (*RunSettings.MODEL_CONFIG, "pointer_generator", "pointer_smoothing", "force_copy")


def resolve(args: Settings, presets: dict[str, dict]) -> Settings:
    """`args` (as parsed) over its preset `presets[args.preset]`: a value given on the command line wins, the preset
    gives the rest (a time budget alone replaces the preset's number of updates; --keep-last defaults to
    --average-last; --learning-rate becomes the schedule's scale once the model's width is known, in `start`), its
    `variants` for a value the command line gave over the rest.
    A run that trains fewer updates than its preset is a check run (`check_run`): it decodes at most
    CHECK_RUN_ITEMS items, at the end and in each validation, unless --eval-sentences (0: all) and
    --eval-metric-sentences say otherwise.
    A `PreflightError` names every value that cannot work. Standard library only: a recipe resolves its command line
    once before torch loads (`training.flags.parse_settings`), so that a mistake in it is told at once."""
    if args.eval_only and args.resume:
        raise PreflightError("--eval-only trains nothing: it cannot --resume")
    if args.eval_only and args.init_from is None:  # scoring a fresh random model would overwrite a run's results
        raise PreflightError("--eval-only scores --init-from MODEL (e.g. --init-from RUN/final --output-dir RUN-eval)")
    if args.init_from is not None and args.vocab_size is not None:
        raise PreflightError("--vocab-size cannot change the vocabulary of --init-from's model")
    if args.preset not in presets:
        raise PreflightError(f"--preset must be one of {', '.join(sorted(presets))}, got {args.preset!r}")
    preset = {RENAMED_PRESET_KEYS.get(key, key): value for key, value in presets[args.preset].items()}
    names = {f.name for f in dataclasses.fields(args)}
    # A preset's values for one value of a setting given on the command line (`variants`: {setting: {value: {...}}}),
    # e.g. the summarization demo's learning rate for a model without the copy mechanism.
    for name, by_value in preset.pop("variants", {}).items():
        if name not in names:
            raise ValueError(f"preset {args.preset!r} has variants by {name}, which is no setting")
        preset |= by_value.get(getattr(args, name), {})
    unknown = sorted(set(preset) - names)
    if unknown:
        names = f"{', '.join(unknown)}, which are no settings of {type(args).__name__}"
        raise ValueError(f"preset {args.preset!r} sets {names}")
    settings = copy.copy(args)
    for name, value in preset.items():
        timed = name == "max_steps" and args.max_train_minutes is not None
        if getattr(settings, name) is None and not timed:
            setattr(settings, name, value)
    for name, value in DEFAULTS.items():
        if getattr(settings, name) is None:
            setattr(settings, name, value)
    if args.cooldown_steps is None:  # the preset's cooldown fits the run: all of a shorter run, none of a timed one
        settings.cooldown_steps = min(settings.cooldown_steps, settings.max_steps or 0)
    problems = [f"preset {args.preset!r} gives no {name}" for name in REQUIRED if getattr(settings, name) is None]
    problems += best_checkpoint_problems(settings) + optimizer_problems(settings)
    if args.init_from is not None:
        new_only = (*settings.ARCHITECTURE, "decoder_start")
        given = [f"--{name.replace('_', '-')}" for name in new_only if getattr(args, name) is not None]
        if given:
            problems.append(f"{', '.join(given)} shape a new model: --init-from's model keeps its own")
    if args.resume and args.overwrite_output_dir:
        problems.append("--resume continues the output folder's run, --overwrite-output-dir removes it: give one")
    if settings.max_steps is None and settings.max_train_minutes is None:
        problems.append(f"preset {args.preset!r} gives no max_steps: give --max-steps or --max-train-minutes")
    if args.lr_scale is not None and args.learning_rate is not None:
        problems.append("give --lr-scale or --learning-rate, not both")
    problems += bound_problems(vars(settings), settings.AT_LEAST)
    if settings.decoder_start not in DECODER_STARTS:
        problems.append(f"--decoder-start must be one of {', '.join(DECODER_STARTS)}, got {settings.decoder_start!r}")
    if settings.host_malloc not in HOST_MALLOC_CHOICES:
        problems.append(f"--host-malloc must be one of {', '.join(HOST_MALLOC_CHOICES)}, got {settings.host_malloc!r}")
    if settings.max_train_minutes is not None and settings.max_train_minutes <= 0:
        problems.append(f"--max-train-minutes must be positive, got {settings.max_train_minutes}")
    if settings.max_length_ratio is not None and 0 < settings.max_length_ratio < 1:
        problems.append(f"--max-length-ratio must be at least 1 (or 0: none), got {settings.max_length_ratio}")
    if problems:
        raise PreflightError("; ".join(problems))
    settings.max_length_ratio = settings.max_length_ratio or None
    bound_check_run(settings, args, preset)
    if settings.keep_last is None:
        settings.keep_last = max(settings.average_last, 1)
    if settings.keep_last < settings.average_last:
        raise PreflightError(
            f"--keep-last {settings.keep_last} keeps fewer checkpoints than --average-last {settings.average_last}"
        )
    return settings


def bound_check_run(settings: RunSettings, args: RunSettings, preset: dict) -> None:
    """Marks `settings` a check run when the command line asks for fewer updates than the preset gives, and bounds
    what such a run decodes to CHECK_RUN_ITEMS (the held-out items scored at the end, the validation items decoded)
    where the command line does not say; --eval-sentences 0 then means all of them."""
    settings.check_run = bool(
        not args.eval_only
        and args.max_steps is not None
        and preset.get("max_steps")
        and args.max_steps < preset["max_steps"]
    )
    if settings.check_run:
        if settings.eval_sentences is None:
            settings.eval_sentences = CHECK_RUN_ITEMS
        if args.eval_metric_sentences is None:
            settings.eval_metric_sentences = min(settings.eval_metric_sentences, CHECK_RUN_ITEMS)
    settings.eval_sentences = settings.eval_sentences or None  # 0: every held-out item
