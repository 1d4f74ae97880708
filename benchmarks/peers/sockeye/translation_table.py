"""Sockeye 3.1 (PyTorch) beside the demo's settings: the side-by-side table (`sockeye_rows`) and the `sockeye-train` /
`sockeye-translate` flags derived from the same settings, each checked against Sockeye 3.1.34's own source
(`sockeye/arguments.py`, `lr_scheduler.py`, `loss.py`, `beam_search.py`, `inference.py`, `model.py`). `sockeye` runs in
Sockeye's own layer order (pre-norm); `sockeye-post-norm`, the paper's and the recipe's, is a labelled variant
(`layer_order`)."""

from benchmarks.peers.common.settings import (
    Row,
    decode_batch_sentences,
    hf_decoding_batches,
    initialisation,
    peer_rate,
    start_token,
)

# Sockeye's four special symbols, ids 0-3 in this order (sockeye.constants.VOCAB_SYMBOLS); a vocabulary JSON that
# does not start with them is refused (sockeye.vocab.is_valid_vocab).
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
BUCKET_WIDTH = 8  # Sockeye's default bucket width (training), passed explicitly so that the table can say it


def initial_learning_rate(s: dict) -> float:
    """Sockeye's `--initial-learning-rate` for `inv-sqrt-decay`: its rate is lr0 * min(1, n/w) / sqrt(max(n, w)),
    which is lr0 * min(n^-0.5, n w^-1.5), so lr0 = lr_scale * d^-0.5 = the paper's peak * sqrt(w)."""
    return peer_rate(s)[1] * s["warmup_steps"] ** 0.5


# Sockeye's --transformer-preprocess and --transformer-postprocess (arguments.py: defaults n:n and dr:dr, pre-norm)
# for its own layer order and for post-norm (the settings' `peer_post_norm`, `--system sockeye-post-norm`).
PRE_NORM = ("n", "dr")
POST_NORM = ("", "drn")


def layer_order(s: dict) -> tuple[str, str]:
    """The preprocess and postprocess sequences of the settings `s`: Sockeye's default (`PRE_NORM`: a layer norm
    before each sublayer, dropout and residual after it, and, its preprocess sequence once more after the stack, a
    final layer norm: encoder.py and decoder.py's final_process), or post-norm for its labelled variant (`POST_NORM`:
    nothing before, dropout, residual and layer norm after, and no final norm, the empty preprocess sequence)."""
    return POST_NORM if s.get("peer_post_norm") else PRE_NORM


def _pair(value) -> str:
    """Sockeye's `encoder:decoder` (or `source:target`) value: the same on both sides."""
    return f"{value}:{value}"


def sockeye_train_flags(s: dict, seed: int) -> list[str]:
    """`sockeye-train`'s model and training flags for the settings `s`: every row of `sockeye_rows` but the data's and
    the vocabulary's (`run_sockeye` adds those)."""
    betas = f"{s['adam_betas'][0]}:{s['adam_betas'][1]}"
    flags = {
        "--encoder": "transformer",
        "--decoder": "transformer",
        "--num-layers": f"{s['encoder_layers']}:{s['decoder_layers']}",
        "--transformer-model-size": _pair(s["d_model"]),
        "--transformer-attention-heads": _pair(s["num_attention_heads"]),
        "--transformer-feed-forward-num-hidden": _pair(s["d_ff"]),
        "--transformer-activation-type": _pair(s["activation"]),
        "--transformer-positional-embedding-type": "fixed",
        # Sockeye's own pre-norm (n / dr, a final norm), or post-norm for sockeye-post-norm (`layer_order`).
        "--transformer-preprocess": _pair(layer_order(s)[0]),
        "--transformer-postprocess": _pair(layer_order(s)[1]),
        "--transformer-dropout-prepost": _pair(s["dropout"]),
        "--transformer-dropout-attention": _pair(s["attention_dropout"]),
        "--transformer-dropout-act": _pair(s["activation_dropout"]),
        "--embed-dropout": _pair(0.0),
        "--weight-tying-type": "src_trg_softmax" if s["tie_word_embeddings"] else "none",
        "--label-smoothing": s["label_smoothing"],
        "--label-smoothing-impl": "mxnet",
        "--optimizer": "adam",
        "--optimizer-betas": betas,
        "--optimizer-eps": s["adam_eps"],
        "--weight-decay": 0.0,
        "--gradient-clipping-type": "none",
        "--gradient-clipping-threshold": -1,
        "--learning-rate-scheduler-type": "inv-sqrt-decay",
        "--initial-learning-rate": f"{initial_learning_rate(s):.10g}",
        "--learning-rate-warmup": s["warmup_steps"],
        "--batch-type": "word",
        "--batch-size": s["tokens_per_step"],
        "--batch-sentences-multiple-of": 1,
        "--update-interval": 1,
        "--bucket-width": BUCKET_WIDTH,
        "--max-seq-len": _pair(s["max_length"]),
        "--max-updates": s["max_steps"],
        "--checkpoint-interval": s["save_every"],
        "--keep-last-params": s["keep_last"],
        "--decode-and-evaluate": 0,
        "--seed": seed,
    }
    return [str(part) for flag, value in flags.items() for part in (flag, value)]


def sockeye_translate_flags(s: dict, longest_source: int) -> list[str]:
    """`sockeye-translate`'s decoding flags for the settings `s`, where the test split's longest source has
    `longest_source` tokens (</s> counted): Sockeye's output limit and batches are one number for every sentence."""
    return [
        *("--beam-size", str(s["num_beams"]), "--beam-search-stop", "all"),
        *("--length-penalty-alpha", str(s["length_penalty"]), "--length-penalty-beta", "5"),
        *("--brevity-penalty-type", "none"),
        # Sockeye's limit is --max-output-length + 1 tokens, </s> included (inference.get_max_input_output_length).
        *("--max-output-length", str(longest_source + s["max_length_offset"] - 1)),
        *("--batch-size", str(max(1, min(s["decode_max_tokens"] // longest_source, decode_batch_sentences(s))))),
        *("--output-type", "translation"),
    ]


def sockeye_rows(s: dict) -> list[Row]:
    """The side-by-side table of Sockeye 3.1 (transformer encoder and decoder, label-smoothed cross-entropy, Adam,
    `inv-sqrt-decay`) against the settings `s` (`demo_settings`): the model's rows, training's, then decoding's."""
    return [*_model_rows(s), *_regularisation_rows(s), *_training_rows(s), *_budget_rows(s), *_decoding_rows(s)]


def _model_rows(s: dict) -> list[Row]:
    """The architecture and what Sockeye builds differently without a flag for it."""
    d, heads, ff = s["d_model"], s["num_attention_heads"], s["d_ff"]
    return [
        Row("encoder layers", str(s["encoder_layers"]), f"--num-layers {s['encoder_layers']}:{s['decoder_layers']}"),
        Row("decoder layers", str(s["decoder_layers"]), f"--num-layers {s['encoder_layers']}:{s['decoder_layers']}"),
        Row("d_model", str(d), f"--transformer-model-size {d}:{d}", "the embeddings take the model size"),
        Row("heads", str(heads), f"--transformer-attention-heads {heads}:{heads}"),
        Row("d_ff", str(ff), f"--transformer-feed-forward-num-hidden {ff}:{ff}"),
        Row("activation", s["activation"], f"--transformer-activation-type {s['activation']}:{s['activation']}"),
        _layer_norm_row(s),
        Row(
            "layer norm epsilon",
            "1e-05",
            "1e-06 (sockeye.transformer.TransformerProcessBlock)",
            "no flag",
            matched=False,
        ),
        Row(
            "positions",
            "sinusoidal",
            "--transformer-positional-embedding-type fixed",
            "sin and cos halves concatenated, not interleaved",
        ),
        Row("embedding scale", "sqrt(d_model)" if s["scale_embedding"] else "1", "sqrt(d_model) (always)"),
        Row(
            "attention biases",
            "q, k, v and output projections with biases",
            "no biases (sockeye.layers' attention projections: bias=False)",
            "no flag",
            matched=False,
        ),
        Row(
            "output bias",
            "none (final_logits_bias off)",
            "a learned bias, zero at first (sockeye.layers.OutputLayer)",
            "no flag",
            matched=False,
        ),
    ]


def _layer_norm_row(s: dict) -> Row:
    """Sockeye's layer order: its own pre-norm, or the recipe's post-norm in the labelled variant."""
    before, after = layer_order(s)
    flags = f"--transformer-preprocess {_pair(before)} --transformer-postprocess {_pair(after)}"
    if s.get("peer_post_norm"):
        return Row(
            "layer norm",
            "post-norm (the paper)",
            f"{flags} (the labelled variant sockeye-post-norm)",
            "not Sockeye's default (pre-norm, the sockeye row): here nothing before each sublayer, "
            "dropout-residual-norm after, and no final norm (it is the empty preprocess sequence)",
        )
    return Row(
        "layer norm",
        "post-norm (the paper)",
        f"{flags} (Sockeye's defaults): pre-norm, a final norm",
        "Sockeye's own layer order (arguments.py's defaults): a layer norm before each sublayer, dropout and "
        "residual after it, and a final layer norm after each stack (the preprocess sequence once more); the "
        "recipe's post-norm is the labelled variant --system sockeye-post-norm",
        matched=False,
    )


def _regularisation_rows(s: dict) -> list[Row]:
    """Dropout, label smoothing, tying and the vocabulary."""
    return [
        Row(
            "dropout",
            str(s["dropout"]),
            f"--transformer-dropout-prepost {_pair(s['dropout'])} --embed-dropout 0.0:0.0",
            "after each sublayer and on embeddings + positions, as here; --embed-dropout (before the positions) off",
        ),
        Row(
            "attention dropout",
            str(s["attention_dropout"]),
            f"--transformer-dropout-attention {_pair(s['attention_dropout'])}",
        ),
        Row(
            "activation dropout",
            str(s["activation_dropout"]),
            f"--transformer-dropout-act {_pair(s['activation_dropout'])}",
        ),
        Row(
            "label smoothing",
            str(s["label_smoothing"]),
            f"--label-smoothing {s['label_smoothing']} --label-smoothing-impl mxnet",
            "the target keeps 1 - eps + eps/V in both (eps spread over all V classes; Sockeye's 'fairseq' "
            "implementation would spread it over V - 1)",
        ),
        Row(
            "tied embeddings",
            "encoder, decoder and output" if s["tie_word_embeddings"] else "none",
            "--weight-tying-type src_trg_softmax --shared-vocab"
            if s["tie_word_embeddings"]
            else "--weight-tying-type none",
        ),
        Row(
            "vocabulary",
            f"shared byte-level BPE, {s['vocab_size']} pieces",
            "--source-vocab vocab.json --target-vocab vocab.json",
            f"vocab.json: Sockeye's {' '.join(SPECIALS)} (ids 0-3), then the {s['vocab_size'] - 4} pieces of "
            "dict.txt in id order: the same size and pieces (a given vocabulary is not padded to a multiple of 8)",
        ),
    ]


def _training_rows(s: dict) -> list[Row]:
    """The optimiser, its schedule and the batches."""
    betas = f"{s['adam_betas'][0]}:{s['adam_betas'][1]}"
    schedule = f"{s['lr_scale']} * d^-0.5 * min(n^-0.5, n w^-1.5), peak {s['peak_lr']:.6g}"
    return [
        Row(
            "BLAS",
            "torch's own (2.x: MKL or oneDNN that dispatch by instruction set)",
            "MKL_DEBUG_CPU_TYPE=5 on a CPU not made by Intel (runner.mkl_fast_path)",
            "Sockeye's torch < 1.14 links MKL 2020.0, which gives such a CPU its generic kernels; the variable gives "
            "it the AVX2 ones (3.5x the matrix products on an AMD EPYC); an Intel CPU keeps MKL's choice",
        ),
        Row(
            "Adam betas",
            f"({s['adam_betas'][0]}, {s['adam_betas'][1]})",
            f"--optimizer adam --optimizer-betas {betas}",
            "torch.optim.Adam",
        ),
        Row("Adam eps", str(s["adam_eps"]), f"--optimizer-eps {s['adam_eps']}"),
        Row(
            "weight decay, clipping",
            "none",
            "--weight-decay 0.0 --gradient-clipping-type none --gradient-clipping-threshold -1",
            "Sockeye's default threshold is 1.0 (of type none): both said",
        ),
        Row(
            "learning rate",
            schedule,
            f"--learning-rate-scheduler-type inv-sqrt-decay --initial-learning-rate {initial_learning_rate(s):.10g} "
            f"--learning-rate-warmup {s['warmup_steps']}",
            "the same curve and offset: inv-sqrt-decay is lr0 * min(1, n/w) / sqrt(max(n, w)) = lr0 * min(n^-0.5, "
            f"n w^-1.5), lr0 = {peer_rate(s)[0]} * d^-0.5, and update n runs at the rate of n (the scheduler steps "
            "before the optimizer); the warmup starts from 0, not from 10% as --learning-rate-warmup's help says",
        ),
        Row(
            "tokens per update",
            f"{s['tokens_per_step']} (padded source and padded target each at most that)",
            f"--batch-type word --batch-size {s['tokens_per_step']} --batch-sentences-multiple-of 1 "
            "--update-interval 1",
            f"Sockeye's word batches are round({s['tokens_per_step']} / mean target length of the bucket) sentences "
            "(unpadded target, </s> counted): about that many real target tokens, where the recipe caps the padded "
            "longer side, so Sockeye's batches hold a little more; its default multiple of 8 sentences is off",
            matched=False,
        ),
        Row(
            "batching",
            "bands of 3 source lengths sorted by target length, batch order shuffled per epoch",
            f"--bucket-width {BUCKET_WIDTH}",
            f"buckets of {BUCKET_WIDTH} tokens each side (padded to the bucket's edge), batches drawn from them in a "
            "shuffled order per epoch",
            matched=False,
        ),
    ]


def _budget_rows(s: dict) -> list[Row]:
    """Updates, checkpoints, validation, averaging, initialisation and the pairs trained on."""
    return [
        Row("updates", str(s["max_steps"]), f"--max-updates {s['max_steps']}"),
        Row(
            "checkpoints",
            f"every {s['save_every']} updates, last {s['keep_last']} kept",
            f"--checkpoint-interval {s['save_every']} --keep-last-params {s['keep_last']}",
            "Sockeye also keeps params.best (lowest validation perplexity) and writes params.00000 (the start)",
        ),
        Row(
            "validation",
            f"loss every {s['eval_every']} updates",
            f"--checkpoint-interval {s['save_every']} --decode-and-evaluate 0",
            f"Sockeye validates (perplexity) at every checkpoint, so every {s['save_every']} updates, and has no "
            "flag to do it less often; it costs wall time, not training (inv-sqrt-decay ignores it, no early "
            "stopping); no BLEU decoding of the validation split",
            matched=False,
        ),
        Row(
            "averaging",
            f"last {s['average_last']} checkpoints",
            f"sockeye-average of the newest {s['average_last']} params.NNNNN files, named",
            "its automatic selection (--strategy best/last/lifespan) ranks by validation perplexity, 'last' being "
            "the N ending at the best: the newest are named instead; the average is decoded as params.best",
        ),
        Row(
            "initialisation",
            initialisation(s),
            "xavier_uniform projections and tied embedding/output matrix, zero biases (sockeye.model."
            "initialize_parameters)",
            "the output layer, initialised after the embeddings, overwrites their uniform(-0.07, 0.07): no flag",
            matched=False,
        ),
        Row(
            "decoder start",
            f"{start_token(s)} then the target shifted right",
            "<s> then the target shifted right (its target input)",
            "Sockeye has no flag for another start; the recipe's --decoder-start bos is Sockeye's",
            matched=s["decoder_start"] == "bos",
        ),
        Row(
            "training pairs",
            f"source <= {s['max_train_source_words']} words; sides <= {s['max_length']} tokens, ratio <= "
            f"{s['max_length_ratio']}",
            f"--max-seq-len {_pair(s['max_length'])}",
            "the exported split, filtered by the recipe's rules; Sockeye's limit leaves out </s>, so it drops none",
        ),
    ]


def _decoding_rows(s: dict) -> list[Row]:
    """The beam search, its length rules and batches, and the pairs it decodes."""
    alpha, offset = s["length_penalty"], s["max_length_offset"]
    return [
        Row("beam", str(s["num_beams"]), f"--beam-size {s['num_beams']}"),
        Row(
            "finished hypotheses",
            f"set aside by transformers' beam search, {s['num_beams']} kept open meanwhile; a sentence stops once "
            f"{s['num_beams']} have finished (early_stopping=True)",
            "--beam-search-stop all",
            "a finished hypothesis keeps its slot in Sockeye's beam (its score normalised) until every slot is "
            "finished: the same beam width, another search",
            matched=False,
        ),
        Row(
            "length penalty",
            f"GNMT: log P / ((5 + len(Y)) / 6)^{alpha}",
            f"--length-penalty-alpha {alpha} --length-penalty-beta 5 --brevity-penalty-type none",
            "Sockeye's ((beta + len) / (beta + 1))^alpha with beta 5 is the same; len counts </s> in both",
        ),
        Row(
            "maximum output",
            f"source tokens (with </s>) + {offset}, </s> included",
            f"--max-output-length L+{offset - 1}",
            f"one limit for every sentence: L is the test split's longest source (</s> counted), and Sockeye stops "
            f"at the limit + 1 tokens with </s>; the longest source gets its own L + {offset}, shorter ones more "
            "(Sockeye's per-sentence limit is a multiple of the source length)",
            matched=False,
        ),
        Row(
            "decoding batches",
            hf_decoding_batches(s),
            f"--batch-size min({s['decode_max_tokens']}//L,{decode_batch_sentences(s)})",
            f"Sockeye's batches count sentences (sorted by length in chunks): {s['decode_max_tokens']} // L "
            "sentences keeps every batch within the recipe's padded tokens, with fewer short sentences a batch; the "
            "beam-row cap's sentences as well",
            matched=False,
        ),
        Row("held-out pairs", f"source <= {s['max_source_words']} words", "the exported splits"),
    ]
