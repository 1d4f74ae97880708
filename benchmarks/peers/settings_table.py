"""The demo preset's settings, each beside the peer's flag that gives it (or the reason none can), and fairseq's
command-line flags derived from them: the side-by-side table a peer run prints and records. Another peer's table and
options live in its own module (`opennmt_settings.opennmt_rows`, `train_config`, `translate_flags`); `Row`, `render`
and `as_records` serve them all."""

from dataclasses import asdict, dataclass

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig, VanillaTransformerConfig
from hf_vanilla.decoding import CPU_BEAM_ROWS
from hf_vanilla.training.arguments import DEFAULTS
from hf_vanilla.training.presets import WMT_PRESETS
from hf_vanilla.training.schedule import peak_learning_rate

# The settings a run may change for a short check (`run.py --max-updates` etc.); a full run changes none.
OVERRIDABLE = ("max_steps", "save_every", "eval_every", "average_last", "init_scheme", "decoder_start")


def peer_rate(s: dict) -> tuple[float, float]:
    """The peer's (lr_scale, peak learning rate): the preset's, or the scale `run.py --peer-lr-scale` gave the peer
    (`peer_lr_scale`; the peak is proportional to it)."""
    scale = s.get("peer_lr_scale") or s["lr_scale"]
    return scale, s["peak_lr"] * scale / s["lr_scale"]


def demo_settings(preset: str = "demo", **overrides) -> dict:
    """Every setting of the translation recipe's `preset` that a peer has to match, as the recipe resolves it: the
    run's (`WMT_PRESETS`, `DEFAULTS`), the model's (`VanillaTransformerConfig.from_size`) and the decoding's
    (`VanillaGenerationConfig.from_model_config`), with `overrides` (names of `OVERRIDABLE`) over them."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    run = {**DEFAULTS, **WMT_PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
    model = VanillaTransformerConfig.from_size(run["model_size"], init_scheme=run["init_scheme"])
    decoding = VanillaGenerationConfig.from_model_config(model)
    betas = tuple(float(b) for b in run["adam_betas"].split(","))
    return {
        "preset": preset,
        "encoder_layers": model.encoder_layers,
        "decoder_layers": model.decoder_layers,
        "d_model": model.d_model,
        "num_attention_heads": model.num_attention_heads,
        "d_ff": model.d_ff,
        "activation": model.activation_function,
        "dropout": model.dropout,
        "attention_dropout": model.attention_dropout,
        "activation_dropout": model.activation_dropout,
        "layer_norm_eps": model.layer_norm_eps,
        "label_smoothing": model.label_smoothing,
        "tie_word_embeddings": model.tie_word_embeddings,
        "scale_embedding": model.scale_embedding,
        "init_scheme": model.init_scheme,
        "decoder_start": run["decoder_start"],
        "vocab_size": run["vocab_size"],
        "adam_betas": betas,
        "adam_eps": run["adam_eps"],
        "warmup_steps": run["warmup_steps"],
        "lr_scale": run["lr_scale"],
        "peak_lr": peak_learning_rate(model.d_model, run["warmup_steps"], run["lr_scale"]),
        "tokens_per_step": run["tokens_per_step"],
        "max_steps": run["max_steps"],
        "save_every": run["save_every"],
        "keep_last": run["average_last"],  # the recipe keeps those it averages unless --keep-last says otherwise
        "average_last": run["average_last"],
        "eval_every": run["eval_every"],
        "max_length": run["max_length"],
        "max_length_ratio": run["max_length_ratio"],
        "max_source_words": run["max_source_words"],
        "max_train_source_words": run["max_train_source_words"],
        "num_beams": decoding.num_beams,
        "length_penalty": decoding.length_penalty,
        "length_penalty_style": decoding.length_penalty_style,
        "max_length_offset": decoding.max_length_offset,
        **DECODING_BATCHES,
    }


# hf_vanilla.decoding.generate_texts' batches on a CPU (where the peers run): source tokens and beam rows.
DECODING_BATCHES = {"decode_max_tokens": 4000, "decode_beam_rows": CPU_BEAM_ROWS}


def decode_batch_sentences(s: dict) -> int:
    """The sentences a decoding batch holds at most under the beam-row cap of the settings `s`."""
    return max(1, s["decode_beam_rows"] // s["num_beams"])


def hf_decoding_batches(s: dict) -> str:
    """hf_vanilla's side of a table's decoding-batches row."""
    return (
        f"at most {s['decode_max_tokens']} source tokens and {s['decode_beam_rows']} beam rows (sentences x beams: "
        f"{decode_batch_sentences(s)} sentences)"
    )


def fairseq_decoding_batches(s: dict) -> list[str]:
    """fairseq-generate's flags for hf_vanilla's decoding batches: `--batch-size` caps its sentences as the beam-row
    cap does; its default multiple of 8 left 4 of 20 test sentences untranslated (16 in one batch, the other 4 never
    decoded), so every sentence is decoded with 1."""
    return [
        *("--max-tokens", str(s["decode_max_tokens"]), "--batch-size", str(decode_batch_sentences(s))),
        *("--required-batch-size-multiple", "1"),
    ]


@dataclass(frozen=True)
class Row:
    """One setting: its value in hf_vanilla's recipe, the peer's (a flag and its value, or what the peer does), and
    how they relate; `matched` is False where the peer cannot give the same."""

    setting: str
    hf_vanilla: str
    peer: str
    note: str = ""
    matched: bool = True


def resolved_training(run, model: VanillaTransformerConfig) -> dict:
    """A resolved recipe run's (`hf_vanilla.training.arguments.resolve`) optimizer, schedule, batch, checkpoint and
    validation settings, with its model's (`run_config`) initialisation, as summarization's and parsing's tables read
    them."""
    names = ("vocab_size", "adam_eps", "warmup_steps", "lr_scale", "tokens_per_step", "max_steps", "save_every")
    names += ("keep_last", "average_last", "eval_every", "decoder_start")
    return {
        **{name: getattr(run, name) for name in names},
        "init_scheme": model.init_scheme,
        "adam_betas": run.betas,
        "peak_lr": peak_learning_rate(model.d_model, run.warmup_steps, run.lr_scale),
    }


def start_token(s: dict) -> str:
    """The token the recipe's decoder starts from under the settings `s` (`--decoder-start`)."""
    return "<s>" if s["decoder_start"] == "bos" else "</s>"


def initialisation(s: dict) -> str:
    """How the recipe draws a new model's weights under the settings `s` (`--init-scheme`)."""
    if s["init_scheme"] == "normal":
        return "--init-scheme normal: normal(0, init_std) projections, zero biases, normal(0, d^-0.5) embeddings"
    return (
        "--init-scheme fairseq: Xavier-uniform W^Q, W^K, W^V (gain 1/sqrt(2)) and W^O, nn.Linear's default elsewhere, "
        "normal(0, d^-0.5) embeddings"
    )


def fairseq_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer` arch, `label_smoothed_cross_entropy`, `adam`,
    `inverse_sqrt`) against the settings `s` (`demo_settings`): the model's rows, training's, then decoding's."""
    return [*_model_rows(s), *_training_rows(s), *_decoding_rows(s)]


def _model_rows(s: dict) -> list[Row]:
    """The architecture, its regularisation and its vocabulary."""
    return [
        Row("encoder layers", str(s["encoder_layers"]), f"--encoder-layers {s['encoder_layers']}"),
        Row("decoder layers", str(s["decoder_layers"]), f"--decoder-layers {s['decoder_layers']}"),
        Row("d_model", str(s["d_model"]), f"--encoder/decoder-embed-dim {s['d_model']}"),
        Row("heads", str(s["num_attention_heads"]), f"--encoder/decoder-attention-heads {s['num_attention_heads']}"),
        Row("d_ff", str(s["d_ff"]), f"--encoder/decoder-ffn-embed-dim {s['d_ff']}"),
        Row("activation", s["activation"], f"--activation-fn {s['activation']}"),
        Row("layer norm", "post-norm (the paper)", "default (no --encoder/decoder-normalize-before)"),
        Row("positions", "sinusoidal", "sinusoidal (sin and cos halves concatenated, not interleaved)"),
        Row("embedding scale", "sqrt(d_model)" if s["scale_embedding"] else "1", "sqrt(d_model) (default)"),
        Row("dropout", str(s["dropout"]), f"--dropout {s['dropout']}"),
        Row("attention dropout", str(s["attention_dropout"]), f"--attention-dropout {s['attention_dropout']}"),
        Row("activation dropout", str(s["activation_dropout"]), f"--activation-dropout {s['activation_dropout']}"),
        Row(
            "label smoothing",
            str(s["label_smoothing"]),
            f"--criterion label_smoothed_cross_entropy --label-smoothing {s['label_smoothing']}",
            "the target keeps 1 - eps + eps/V here (eps spread over all V classes), 1 - eps in fairseq (eps over "
            "the other V - 1): a difference of eps/V",
        ),
        Row(
            "tied embeddings",
            "encoder, decoder and output" if s["tie_word_embeddings"] else "none",
            "--share-all-embeddings (one dictionary for both sides)",
        ),
        Row(
            "vocabulary",
            f"shared byte-level BPE, {s['vocab_size']} pieces",
            f"the same pieces (dict.txt of the {s['vocab_size'] - 4} non-special pieces + fairseq's 4 specials)",
        ),
    ]


def _training_rows(s: dict) -> list[Row]:
    """The optimiser, its schedule, the batches, checkpoints, validation, averaging and initialisation."""
    betas = f"({s['adam_betas'][0]}, {s['adam_betas'][1]})"
    schedule = f"{s['lr_scale']} * d^-0.5 * min(n^-0.5, n w^-1.5), peak {s['peak_lr']:.6g}"
    return [
        Row("Adam betas", betas, f"--optimizer adam --adam-betas '{betas}'"),
        Row("Adam eps", str(s["adam_eps"]), f"--adam-eps {s['adam_eps']}"),
        Row("weight decay, clipping", "none", "--weight-decay 0 --clip-norm 0 (defaults)"),
        Row(
            "learning rate",
            schedule,
            f"--lr-scheduler inverse_sqrt --lr {peer_rate(s)[1]:.6g} --warmup-init-lr 0 "
            f"--warmup-updates {s['warmup_steps']}",
            "the same curve (linear to the peak, then peak * sqrt(w/n)), but fairseq's update n uses the rate of "
            "n-1 (its first update runs at lr 0)",
            matched=False,
        ),
        Row(
            "tokens per update",
            f"{s['tokens_per_step']} (padded source and padded target each at most that)",
            f"--max-tokens {s['tokens_per_step']} --update-freq 1 --required-batch-size-multiple 1",
            "both cap max(padded source, padded target) * sentences; fairseq's default batch multiple of 8 is off",
        ),
        Row(
            "batching",
            "bands of 3 source lengths sorted by target length, batch order shuffled per epoch",
            "sorted by (target, source) length, batch order shuffled per epoch",
            "the same budget, other neighbours in a batch",
            matched=False,
        ),
        Row("updates", str(s["max_steps"]), f"--max-update {s['max_steps']}"),
        Row(
            "checkpoints",
            f"every {s['save_every']} updates, last {s['keep_last']} kept",
            f"--save-interval-updates {s['save_every']} --keep-interval-updates {s['keep_last']} "
            "--no-epoch-checkpoints",
        ),
        Row(
            "validation",
            f"loss every {s['eval_every']} updates",
            f"--validate-interval-updates {s['eval_every']} --validate-interval 1000000 (none at epoch ends)",
            f"fairseq also validates at every mid-epoch checkpoint save (train.py's validate_and_save), so every "
            f"{s['save_every']} updates: wall time, not training, differs",
            matched=False,
        ),
        Row(
            "averaging",
            f"last {s['average_last']} checkpoints",
            f"scripts/average_checkpoints.py --num-update-checkpoints {s['average_last']}",
            "the script is in fairseq's repository, not in the fairseq-fixed package: where it is absent, the same "
            "mean of the newest update checkpoints (fairseq_peer.AVERAGE_FALLBACK)",
        ),
        Row(
            "initialisation",
            initialisation(s),
            "Xavier-uniform W^Q, W^K, W^V (gain 1/sqrt(2); biases U(+-d^-0.5)) and W^O (bias 0); feed-forward layers "
            "PyTorch's nn.Linear default (weights and biases U(+-fan_in^-0.5)); normal(0, d^-0.5) embeddings",
            "fairseq has no flag for another initialisation (modules/multihead_attention.py reset_parameters; "
            "transformer_layer.py build_fc1/build_fc2); hf_vanilla's --init-scheme fairseq draws fairseq's",
            matched=s["init_scheme"] == "fairseq",
        ),
        Row(
            "decoder start",
            f"{start_token(s)} then the target shifted right (--decoder-start {s['decoder_start']})",
            "</s> then the target shifted right (prev_output_tokens)",
            "fairseq has no flag for another start; the paper names none",
            matched=s["decoder_start"] == "eos",
        ),
    ]


def _decoding_rows(s: dict) -> list[Row]:
    """The beam search, its length rules and batches, and the pairs each split keeps."""
    return [
        Row("beam", str(s["num_beams"]), f"--beam {s['num_beams']}"),
        Row(
            "length penalty",
            f"GNMT: log P / ((5 + len(Y)) / 6)^{s['length_penalty']}",
            f"--lenpen {s['length_penalty']}: length normalization, log P / len(Y)^{s['length_penalty']}",
            "fairseq-generate has no GNMT penalty; the same alpha under its formula",
            matched=False,
        ),
        Row(
            "maximum output",
            f"source tokens (with </s>) + {s['max_length_offset']}, </s> included",
            f"--max-len-a 1 --max-len-b {s['max_length_offset'] - 1}",
            "fairseq's limit a * source + b leaves out the </s> it adds: b is one less",
        ),
        Row(
            "decoding batches",
            hf_decoding_batches(s),
            " ".join(fairseq_decoding_batches(s)),
            "fairseq counts max(source, reference) tokens; with its default multiple of 8 it left sentences out",
        ),
        Row(
            "training pairs",
            f"source <= {s['max_train_source_words']} words; sides <= {s['max_length']} tokens, ratio <= "
            f"{s['max_length_ratio']}",
            "the exported split, filtered by the recipe's rules",
        ),
        Row("held-out pairs", f"source <= {s['max_source_words']} words", "the exported splits"),
    ]


def fairseq_train_flags(s: dict, seed: int, extra: dict | None = None) -> list[str]:
    """`fairseq-train`'s flags (after the data folder) for the settings `s`: every row of `fairseq_rows`, with `extra`
    (flag -> value, None for a switch) over them or after them (another task's `--arch` and its own flags)."""
    betas = f"({s['adam_betas'][0]}, {s['adam_betas'][1]})"
    flags = {
        "--arch": "transformer",
        "--share-all-embeddings": None,
        "--encoder-layers": s["encoder_layers"],
        "--decoder-layers": s["decoder_layers"],
        "--encoder-embed-dim": s["d_model"],
        "--decoder-embed-dim": s["d_model"],
        "--encoder-attention-heads": s["num_attention_heads"],
        "--decoder-attention-heads": s["num_attention_heads"],
        "--encoder-ffn-embed-dim": s["d_ff"],
        "--decoder-ffn-embed-dim": s["d_ff"],
        "--activation-fn": s["activation"],
        "--dropout": s["dropout"],
        "--attention-dropout": s["attention_dropout"],
        "--activation-dropout": s["activation_dropout"],
        "--criterion": "label_smoothed_cross_entropy",
        "--label-smoothing": s["label_smoothing"],
        "--optimizer": "adam",
        "--adam-betas": betas,
        "--adam-eps": s["adam_eps"],
        "--weight-decay": 0.0,
        "--clip-norm": 0.0,
        "--lr-scheduler": "inverse_sqrt",
        "--lr": f"{peer_rate(s)[1]:.10g}",
        "--warmup-init-lr": 0,
        "--warmup-updates": s["warmup_steps"],
        "--max-tokens": s["tokens_per_step"],
        "--update-freq": 1,
        "--required-batch-size-multiple": 1,
        "--max-update": s["max_steps"],
        "--save-interval-updates": s["save_every"],
        "--keep-interval-updates": s["keep_last"],
        "--no-epoch-checkpoints": None,
        "--validate-interval-updates": s["eval_every"],
        "--validate-interval": 1_000_000,
        "--seed": seed,
    }
    if not s["eval_every"]:
        flags.pop("--validate-interval-updates")
        flags["--disable-validation"] = None
    flags.update(extra or {})
    return [str(part) for flag, value in flags.items() for part in ((flag,) if value is None else (flag, value))]


def fairseq_generate_flags(s: dict) -> list[str]:
    """`fairseq-generate`'s decoding flags for the settings `s`."""
    return [
        *("--beam", str(s["num_beams"]), "--lenpen", str(s["length_penalty"])),
        *("--max-len-a", "1", "--max-len-b", str(s["max_length_offset"] - 1)),
        *fairseq_decoding_batches(s),
    ]


def render(rows: list[Row], peer: str) -> str:
    """The table as Markdown, the settings a peer cannot match marked and listed under it."""
    lines = [f"| setting | hf_vanilla | {peer} | note |", "|---|---|---|---|"]
    for row in rows:
        mark = "" if row.matched else " (not matched)"
        lines.append(f"| {row.setting}{mark} | {row.hf_vanilla} | {row.peer} | {row.note} |")
    unmatched = [row.setting for row in rows if not row.matched]
    if unmatched:
        lines.append(f"\n{peer} cannot match: {', '.join(unmatched)}.")
    return "\n".join(lines)


def as_records(rows: list[Row]) -> list[dict]:
    """The rows as the record's `settings`."""
    return [asdict(row) for row in rows]
