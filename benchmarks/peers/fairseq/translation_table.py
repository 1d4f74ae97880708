"""fairseq 0.12's side of the translation demo's settings table (`fairseq_rows`: the model's rows, training's, then
decoding's, each beside the recipe's value) and fairseq's command-line flags derived from the same settings
(`fairseq_train_flags`, `fairseq_generate_flags`); summarization's and parsing's tables build on its rows."""

from benchmarks.peers.common.settings import (
    Row,
    decode_batch_sentences,
    hf_decoding_batches,
    initialisation,
    peer_rate,
    start_token,
)


def fairseq_decoding_batches(s: dict) -> list[str]:
    """fairseq-generate's flags for hf_vanilla's decoding batches: `--batch-size` caps its sentences as the beam-row
    cap does; its default multiple of 8 left 4 of 20 test sentences untranslated (16 in one batch, the other 4 never
    decoded), so every sentence is decoded with 1."""
    return [
        *("--max-tokens", str(s["decode_max_tokens"]), "--batch-size", str(decode_batch_sentences(s))),
        *("--required-batch-size-multiple", "1"),
    ]


def fairseq_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer` arch, `label_smoothed_cross_entropy`, `adam`,
    `inverse_sqrt`) against the settings `s` (`translation.demo_settings`): the model's rows, training's, then
    decoding's."""
    return [*model_rows(s), *training_rows(s), *_decoding_rows(s)]


def model_rows(s: dict) -> list[Row]:
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


def training_rows(s: dict) -> list[Row]:
    """The optimiser, its schedule, the batches, checkpoints, validation, averaging and initialisation."""
    betas = f"({s['adam_betas'][0]}, {s['adam_betas'][1]})"
    schedule = f"{s['lr_scale']} * d^-0.5 * min(n^-0.5, n w^-1.5), peak {s['peak_lr']:.6g}"
    cooldown = s.get("cooldown_steps")
    schedule += f", then linearly to 0 over the last {cooldown} updates" if cooldown else ""
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
            "n-1 (its first update runs at lr 0)" + ("; inverse_sqrt has no cooldown" if cooldown else ""),
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
            "mean of the newest update checkpoints (fairseq/runner.py's AVERAGE_FALLBACK)",
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
