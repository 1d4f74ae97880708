"""OpenNMT-py 3.5.1's side of the translation demo's settings table (`opennmt_rows`) and the options derived from
them: onmt_train's YAML config (`train_config`) and onmt_translate's flags (`translate_flags`). Every option was read
in the installed package's source (`onmt/opts.py`, `onmt/encoders/transformer.py`, `onmt/utils/optimizers.py`,
`onmt/inputters/`, `onmt/translate/`); each row names the option with the value the config or the command passes.
`runner` runs them."""

from pathlib import Path

from benchmarks.peers.common.settings import Row, hf_decoding_batches, initialisation, peer_rate, start_token

REPORT_EVERY = 10  # updates between training reports (fairseq's --log-interval 10)


def opennmt_rows(s: dict) -> list[Row]:
    """The side-by-side table of OpenNMT-py 3.5.1 (`transformer` encoder and decoder, `adam`, `noam`) against the
    settings `s` (`translation.demo_settings`): the model's rows, training's, then decoding's."""
    return [*architecture_rows(s), *regularisation_rows(s), *optimiser_rows(s), *schedule_rows(s),
            *_decoding_rows(s)]  # fmt: skip


def architecture_rows(s: dict) -> list[Row]:
    """The layers, their normalisation, positions, biases, the vocabulary and its ties."""
    d, heads, ff, size = s["d_model"], s["num_attention_heads"], s["d_ff"], s["vocab_size"]
    return [
        Row("encoder layers", str(s["encoder_layers"]), f"encoder_type transformer, enc_layers {s['encoder_layers']}"),
        Row("decoder layers", str(s["decoder_layers"]), f"decoder_type transformer, dec_layers {s['decoder_layers']}"),
        Row("d_model", str(d), f"hidden_size {d}, word_vec_size {d}"),
        Row("heads", str(heads), f"heads {heads}"),
        Row("d_ff", str(ff), f"transformer_ff {ff}"),
        Row("activation", s["activation"], f"pos_ffn_activation_fn {s['activation']}"),
        Row(
            "layer norm",
            f"post-norm (the paper), eps {s['layer_norm_eps']}",
            f"pre-norm, layer_norm standard, norm_eps {s['layer_norm_eps']}",
            "3.5.1's transformer layers are pre-norm only (encoders/transformer.py normalises each sub-layer's input, "
            "a final LayerNorm after the stack); no option gives post-norm",
            matched=False,
        ),
        Row(
            "positions",
            "sinusoidal, sin on even and cos on odd dimensions, from 0",
            "position_encoding true, position_encoding_type SinusoidalInterleaved (the same table)",
        ),
        Row(
            "embedding scale",
            "sqrt(d_model)" if s["scale_embedding"] else "1",
            "sqrt(d_model) (modules/embeddings.PositionalEncoding, always)",
            matched=s["scale_embedding"],
        ),
        Row(
            "projection biases",
            "every attention and feed-forward projection",
            "add_qkvbias true, add_ffnbias true",
            "3.5.1's defaults leave both out (store_true flags): without them no Q/K/V/output or feed-forward bias",
        ),
        Row(
            "output bias",
            "none (final_logits_bias False)",
            "the generator's nn.Linear bias (model_builder.py), zero at start, learned",
            "no option removes it",
            matched=False,
        ),
        Row(
            "tied embeddings",
            "encoder, decoder and output" if s["tie_word_embeddings"] else "none",
            "share_vocab true, share_embeddings true, share_decoder_embeddings true",
        ),
        Row(
            "vocabulary",
            f"shared byte-level BPE, {size} pieces",
            f"src_vocab, src_vocab_size {size}, tgt_vocab_size {size}, vocab_size_multiple 1 (the file: the "
            f"{size - 4} non-special pieces in id order, `piece<TAB>1`; OpenNMT puts <unk> <blank> <s> </s> in front)",
            "no onmt_build_vocab: the same pieces; its size limit counts the 4 specials and its default multiple of 8 "
            "would pad the vocabulary with `averyunlikelytoken` entries",
        ),
        Row(
            "source end token",
            "each source ends with </s>",
            "no </s> on the source (inputters/text_utils.numericalize adds <s> ... </s> to the target only)",
            "the encoder sees one token fewer a sentence",
            matched=False,
        ),
        Row(
            "decoder start",
            f"{start_token(s)} then the target shifted right",
            "<s> then the target shifted right (inputters/text_utils.numericalize)",
            "OpenNMT-py has no option for another start; the recipe's --decoder-start bos is OpenNMT-py's",
            matched=s["decoder_start"] == "bos",
        ),
    ]


def regularisation_rows(s: dict) -> list[Row]:
    """Dropouts and label smoothing."""
    return [
        Row("dropout", str(s["dropout"]), f"dropout {s['dropout']}"),
        Row(
            "attention dropout",
            str(s["attention_dropout"]),
            f"attention_dropout {s['attention_dropout']}",
            "OpenNMT's default is 0.1",
        ),
        Row(
            "activation dropout",
            str(s["activation_dropout"]),
            f"dropout {s['dropout']} (modules/position_ffn applies it after the activation too)",
            "the feed-forward's inner dropout is the residual dropout; no option of its own",
            matched=s["activation_dropout"] == s["dropout"],
        ),
        Row(
            "label smoothing",
            str(s["label_smoothing"]),
            f"label_smoothing {s['label_smoothing']}",
            "nn.CrossEntropyLoss(label_smoothing=eps) (utils/loss.py): eps spread over all V classes, as here, though "
            "the option's help says eps/(V-1)",
        ),
    ]


def optimiser_rows(s: dict) -> list[Row]:
    """Adam, its schedule and what an update is."""
    beta1, beta2 = s["adam_betas"]
    schedule = f"{s['lr_scale']} * d^-0.5 * min(n^-0.5, n w^-1.5), peak {s['peak_lr']:.6g}"
    return [
        Row("Adam betas", f"({beta1}, {beta2})", f"optim adam, adam_beta1 {beta1}, adam_beta2 {beta2}"),
        Row(
            "Adam eps",
            str(s["adam_eps"]),
            "1e-8 (utils/optimizers.build_torch_optimizer passes it fixed)",
            "no option",
            matched=False,
        ),
        Row(
            "weight decay, clipping", "none", "max_grad_norm 0 (no weight decay in its Adam)", "its default clips at 5"
        ),
        Row(
            "learning rate",
            schedule,
            f"learning_rate {peer_rate(s)[0]}, decay_method noam, warmup_steps {s['warmup_steps']}, "
            f"hidden_size {s['d_model']}",
            "noam_decay is d^-0.5 * min(n^-0.5, n w^-1.5) times learning_rate, with d = hidden_size and n counted "
            "from 1 for the first update, as here",
        ),
        Row(
            "tokens per update",
            f"{s['tokens_per_step']} (padded source and padded target each at most that)",
            f"batch_type tokens, batch_size {s['tokens_per_step']}, accum_count 1, batch_size_multiple 1",
            "it caps sentences * max(source, target) with the source without </s> and the target with <s> and </s>: "
            "one token a sentence more on the (longer) target side",
            matched=False,
        ),
        Row(
            "loss normalisation",
            "summed loss / the update's target tokens (</s> included)",
            "normalization tokens",
            "trainer._accum_batches leaves each sentence's </s> out of the count the summed loss is divided by",
            matched=False,
        ),
    ]


def schedule_rows(s: dict) -> list[Row]:
    """Batching, the budget, checkpoints, validation, averaging, initialisation."""
    return [
        Row(
            "batching",
            "bands of 3 source lengths sorted by target length, batch order shuffled per epoch",
            "bucket_size (the training pairs: a bucket is one epoch), num_workers 0",
            "each bucket sorted by (source, target) length, cut greedily, its batches shuffled; a batch skips a "
            "second copy of a source it holds (dynamic_iterator.batch_iter)",
            matched=False,
        ),
        Row("updates", str(s["max_steps"]), f"train_steps {s['max_steps']}"),
        Row(
            "checkpoints",
            f"every {s['save_every']} updates, last {s['keep_last']} kept",
            f"save_checkpoint_steps {s['save_every']}, keep_checkpoint {s['keep_last']}",
        ),
        Row(
            "validation",
            f"loss every {s['eval_every']} updates",
            f"valid_steps {s['eval_every']}, valid_batch_size {s['tokens_per_step']}",
            "valid_batch_size counts tokens too (batch_type tokens): its default, 32, makes one-sentence batches",
        ),
        Row(
            "averaging",
            f"last {s['average_last']} checkpoints",
            f"the newest {s['average_last']} model_step_N.pt averaged by onmt_average_models -models",
        ),
        Row(
            "initialisation",
            initialisation(s),
            "param_init 0, param_init_glorot true (xavier_uniform on every matrix, the embeddings too; biases zero)",
            "OpenNMT's documented transformer settings; it has no normal initialisation",
            matched=False,
        ),
    ]


def _decoding_rows(s: dict) -> list[Row]:
    """The beam search, its length rules and batches, and the pairs each split keeps."""
    offset = s["max_length_offset"]
    return [
        *beam_rows(s),
        Row(
            "maximum output",
            f"source tokens (with </s>) + {offset}, </s> included",
            f"max_length (the longest test source with </s> + {offset - 1}), max_length_ratio 0",
            "one limit for every sentence, the longest source's (its ratio rule, min(max_length, longest source in "
            "the batch * ratio + 5), cannot add an offset of 50); max_length leaves out the </s>",
            matched=False,
        ),
        Row(
            "decoding batches",
            hf_decoding_batches(s),
            f"batch_type tokens, batch_size {s['decode_max_tokens']}",
            "its sources are counted without </s>; it has no cap on sentences (hf_vanilla's binds only on batches of "
            "short sources)",
        ),
        Row(
            "training pairs",
            f"source <= {s['max_train_source_words']} words; sides <= {s['max_length']} tokens, ratio <= "
            f"{s['max_length_ratio']}",
            "the exported split, filtered by the recipe's rules; no transforms (no filtertoolong): OpenNMT keeps all",
        ),
        Row("held-out pairs", f"source <= {s['max_source_words']} words", "the exported splits"),
    ]


def beam_rows(s: dict) -> list[Row]:
    """The beam, its length penalty (GNMT's: `length_penalty wu`) and when a sentence's search ends."""
    alpha = s["length_penalty"]
    return [
        Row("beam", str(s["num_beams"]), f"beam_size {s['num_beams']}"),
        Row(
            "length penalty",
            f"GNMT: log P / ((5 + len(Y)) / 6)^{alpha}",
            f"length_penalty wu, alpha {alpha}",
            "the same GNMT formula (translate/penalties.length_wu), but beam_search.advance passes len(Y) + 1 (its "
            "length counts the <s> it starts from)",
            matched=False,
        ),
        Row(
            "beam stop",
            "a sentence ends once num_beams hypotheses have ended (early_stopping True)",
            "ratio 0: a sentence ends when its best beam ends",
            "beam_search.beams_non_finished; no option gives the other rule",
            matched=False,
        ),
    ]


def train_config(
    s: dict,
    seed: int,
    data: Path,
    vocabulary: Path,
    save_model: Path,
    train_pairs: int,
    sides: tuple[str, str] = ("en", "de"),
) -> dict:
    """onmt_train's options (its YAML config) for the settings `s`: every option `opennmt_rows` names, the exported
    splits of `data` (files suffixed by `sides`, source and target) without transforms, the vocabulary file,
    checkpoints `save_model`_step_N.pt, one bucket of `train_pairs` (an epoch)."""
    paths = {stem: {"path_src": str(data / f"{stem}.{sides[0]}"), "path_tgt": str(data / f"{stem}.{sides[1]}"),
                    "transforms": []} for stem in ("train", "valid")}  # fmt: skip
    splits = {"corpus_1": {**paths["train"], "weight": 1}}
    if s["eval_every"]:
        splits["valid"] = paths["valid"]
    beta1, beta2 = s["adam_betas"]
    return {
        "data": splits,
        **{"src_vocab": str(vocabulary), "share_vocab": True, "vocab_size_multiple": 1},
        **{"src_vocab_size": s["vocab_size"], "tgt_vocab_size": s["vocab_size"]},
        **{"save_model": str(save_model), "save_checkpoint_steps": s["save_every"], "keep_checkpoint": s["keep_last"]},
        **{"seed": seed, "model_dtype": "fp32", "report_every": REPORT_EVERY},
        **{"encoder_type": "transformer", "decoder_type": "transformer"},
        **{"enc_layers": s["encoder_layers"], "dec_layers": s["decoder_layers"], "heads": s["num_attention_heads"]},
        **{"hidden_size": s["d_model"], "word_vec_size": s["d_model"], "transformer_ff": s["d_ff"]},
        **{"pos_ffn_activation_fn": s["activation"], "layer_norm": "standard", "norm_eps": s["layer_norm_eps"]},
        **{"position_encoding": True, "position_encoding_type": "SinusoidalInterleaved"},
        **{"add_qkvbias": True, "add_ffnbias": True},
        **{"share_embeddings": True, "share_decoder_embeddings": True},
        **{"dropout": [s["dropout"]], "attention_dropout": [s["attention_dropout"]], "dropout_steps": [0]},
        "label_smoothing": s["label_smoothing"],
        **{"optim": "adam", "adam_beta1": beta1, "adam_beta2": beta2, "max_grad_norm": 0},
        **{"learning_rate": peer_rate(s)[0], "decay_method": "noam", "warmup_steps": s["warmup_steps"]},
        **{"batch_type": "tokens", "batch_size": s["tokens_per_step"], "batch_size_multiple": 1},
        **{"accum_count": [1], "normalization": "tokens", "bucket_size": train_pairs, "num_workers": 0},
        "train_steps": s["max_steps"],
        # Without a validation corpus valid_steps must still exceed the updates (trainer.train reports at its
        # multiples and would read a validation it never made).
        "valid_steps": s["eval_every"] or s["max_steps"] + 1,
        "valid_batch_size": s["tokens_per_step"],
        **{"param_init": 0, "param_init_glorot": True},
    }


def translate_flags(s: dict, max_source_tokens: int) -> list[str]:
    """onmt_translate's decoding flags for the settings `s`: the longest test source (`max_source_tokens`, </s>
    counted) sets the one output limit (translate/decode_strategy: max_length counts neither <s> nor </s>)."""
    return [
        *("-beam_size", str(s["num_beams"]), "-length_penalty", "wu", "-alpha", str(s["length_penalty"])),
        *("-ratio", "0", "-max_length", str(max_source_tokens + s["max_length_offset"] - 1), "-max_length_ratio", "0"),
        *("-batch_type", "tokens", "-batch_size", str(s["decode_max_tokens"]), "-report_time"),
    ]
