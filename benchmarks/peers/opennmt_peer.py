"""OpenNMT-py 3.5.1 on the exported pieces: its vocabulary file written from the tokenizer's pieces (no
onmt_build_vocab), one YAML config for onmt_train, the last checkpoints averaged by onmt_average_models, the test
split decoded by onmt_translate. Every option below was read in the installed package's source (`onmt/opts.py`,
`onmt/encoders/transformer.py`, `onmt/utils/optimizers.py`, `onmt/inputters/`, `onmt/translate/`); the side-by-side
table (`opennmt_rows`) names each option with the value the config or the command passes."""

import re
from pathlib import Path

import yaml

from peer_process import PeerJob, PeerRun, environment, newest_numbered, run_logged
from settings_table import Row, peer_rate
from split_pieces import longest_source, read_dictionary

# OpenNMT's own specials (opts.py `default_specials`), put in front of the vocabulary file's tokens, ids 0-3.
SPECIALS = ("<unk>", "<blank>", "<s>", "</s>")
# Its source-feature separator (inputters/text_utils.parse_features splits every token on it).
FEATURE_SEPARATOR = "\uffe8"
CHECKPOINT = re.compile(r"model_step_(\d+)\.pt")  # onmt_train's checkpoint files
REPORT_EVERY = 10  # updates between training reports (fairseq's --log-interval 10)
# onmt_train's report (utils/statistics.Statistics.output): "Step %s; acc: %2.1f; ppl: %5.1f; xent: %2.1f; lr: %7.5f;
# sents: %7.0f; bsz: %4.0f/%4.0f/%2.0f; %3.0f/%3.0f tok/s; %6.0f sec;" (bsz: source/target tokens/sentences a batch).
REPORT = re.compile(
    r"Step\s+(?P<step>\d+)(?:/\s*\d+)?; acc:\s*(?P<acc>[\d.]+); ppl:\s*(?P<ppl>[\d.]+|inf); xent:\s*(?P<xent>[\d.]+); "
    r"lr:\s*(?P<lr>[\d.e+-]+); sents:\s*(?P<sents>\d+); "
    r"bsz:\s*(?P<bsz_src>\d+)/\s*(?P<bsz_tgt>\d+)/\s*(?P<bsz_sents>\d+); "
    r"\s*(?P<src_tok_s>\d+)/\s*(?P<tgt_tok_s>\d+) tok/s;\s*(?P<sec>\d+) sec;"
)


def opennmt_rows(s: dict) -> list[Row]:
    """The side-by-side table of OpenNMT-py 3.5.1 (`transformer` encoder and decoder, `adam`, `noam`) against the
    settings `s` (`settings_table.demo_settings`): the model's rows, training's, then decoding's."""
    return [*_architecture_rows(s), *_regularisation_rows(s), *_optimiser_rows(s), *_schedule_rows(s),
            *_decoding_rows(s)]  # fmt: skip


def _architecture_rows(s: dict) -> list[Row]:
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
            "the encoder sees one token fewer a sentence; the decoder starts from <s> in both",
            matched=False,
        ),
    ]


def _regularisation_rows(s: dict) -> list[Row]:
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


def _optimiser_rows(s: dict) -> list[Row]:
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


def _schedule_rows(s: dict) -> list[Row]:
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
            "normal(0, init_std) projections, normal(0, d^-0.5) embeddings",
            "param_init 0, param_init_glorot true (xavier_uniform on every matrix, the embeddings too; biases zero)",
            "OpenNMT's documented transformer settings; it has no normal initialisation",
            matched=False,
        ),
    ]


def _decoding_rows(s: dict) -> list[Row]:
    """The beam search, its length rules and batches, and the pairs each split keeps."""
    alpha, offset = s["length_penalty"], s["max_length_offset"]
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
            f"at most {s['decode_max_tokens']} source tokens",
            f"batch_type tokens, batch_size {s['decode_max_tokens']}",
            "its sources are counted without </s>",
        ),
        Row(
            "training pairs",
            f"source <= {s['max_train_source_words']} words; sides <= {s['max_length']} tokens, ratio <= "
            f"{s['max_length_ratio']}",
            "the exported split, filtered by the recipe's rules; no transforms (no filtertoolong): OpenNMT keeps all",
        ),
        Row("held-out pairs", f"source <= {s['max_source_words']} words", "the exported splits"),
    ]


def write_vocabulary(dictionary: Path, path: Path) -> list[str]:
    """OpenNMT's vocabulary file (`piece<TAB>count` lines, inputters/inputter._read_vocab_file) of the pieces of
    fairseq's `dict.txt` (the tokenizer's pieces but its 4 specials, in id order); returns them. OpenNMT puts its
    own 4 `SPECIALS` in front and keeps the file's order (pyonmttok.build_vocab_from_tokens: equal counts keep
    their order), so the model has the tokenizer's size and pieces."""
    pieces = read_dictionary(dictionary)
    clashes = sorted({piece for piece in pieces if piece in SPECIALS or FEATURE_SEPARATOR in piece})
    if clashes:
        raise ValueError(f"pieces OpenNMT would read as its specials or as source features: {clashes}")
    if len(set(pieces)) != len(pieces) or any(not p or any(c.isspace() for c in p) for p in pieces):
        raise ValueError(f"{dictionary}: a piece is empty, repeated or holds white space")
    path.write_text("".join(f"{piece}\t1\n" for piece in pieces), encoding="utf-8")
    return pieces


def train_config(s: dict, seed: int, data: Path, vocabulary: Path, save_model: Path, train_pairs: int) -> dict:
    """onmt_train's options (its YAML config) for the settings `s`: every option `opennmt_rows` names, the exported
    splits of `data` without transforms, the vocabulary file, checkpoints `save_model`_step_N.pt, one bucket of
    `train_pairs` (an epoch)."""
    corpus = {"transforms": [], "weight": 1}
    splits = {"corpus_1": {"path_src": str(data / "train.en"), "path_tgt": str(data / "train.de"), **corpus}}
    if s["eval_every"]:
        splits["valid"] = {"path_src": str(data / "valid.en"), "path_tgt": str(data / "valid.de"), "transforms": []}
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


def training_reports(log_text: str) -> list[dict]:
    """onmt_train's per-report figures (`REPORT`), as numbers, in log order."""
    return [{k: float(v) for k, v in m.groupdict().items()} for m in REPORT.finditer(log_text)]


def train_figures(log_text: str) -> dict:
    """The training's figures from its log: the last report's (step, acc, ppl, xent, lr, sec), the last validation
    perplexity, the vocabulary size it built, and the means of its source and target tokens a second."""
    reports = training_reports(log_text)
    if not reports:
        raise ValueError("onmt_train logged no 'Step N; acc: ...; tok/s; ... sec;' report")
    last = reports[-1]
    figures = {key: last[key] for key in ("step", "acc", "ppl", "xent", "lr", "sec")}
    figures["src_tok_per_s_mean"] = round(sum(r["src_tok_s"] for r in reports) / len(reports), 1)
    figures["tgt_tok_per_s_mean"] = round(sum(r["tgt_tok_s"] for r in reports) / len(reports), 1)
    validations = re.findall(r"Validation perplexity: ([\d.e+-]+|inf)", log_text)
    if validations:
        figures["valid_ppl"] = float(validations[-1])
    vocabulary = re.search(r"\* src vocab size = (\d+)", log_text)
    if vocabulary:
        figures["vocab_size"] = int(vocabulary.group(1))
    return figures


def tokens_per_second(reports: list[dict]) -> float:
    """Source and target tokens a second as hf_vanilla counts them (</s> on both sides), from onmt_train's reports:
    each report's source rate (without </s>) raised by its sentences (bsz: sentences / source tokens a batch) plus
    its target rate (with </s>), averaged over the reports weighted by their seconds (the differences of the
    cumulative `sec`; equally where those round to nothing)."""
    if not reports:
        raise ValueError("no training report to take tokens a second from")
    rates = [r["src_tok_s"] * (1 + r["bsz_sents"] / max(r["bsz_src"], 1)) + r["tgt_tok_s"] for r in reports]
    seconds = [r["sec"] - previous["sec"] for previous, r in zip([{"sec": 0.0}, *reports], reports)]
    if sum(seconds) <= 0:
        seconds = [1.0] * len(reports)
    return round(sum(rate * s for rate, s in zip(rates, seconds)) / sum(seconds), 1)


def decoding_speed(translate_log: str, sentences: int) -> float:
    """Sentences a second of onmt_translate's -report_time lines: 1000 / `Average translation time (ms): Y`, else
    `sentences` / `Total translation time (s): X` (coarser: X is rounded to a tenth of a second)."""
    average = re.search(r"Average translation time \(ms\): ([\d.]+)", translate_log)
    if average and float(average.group(1)) > 0:
        return round(1000 / float(average.group(1)), 2)
    total = re.search(r"Total translation time \(s\): ([\d.]+)", translate_log)
    if not total:
        raise ValueError("onmt_translate printed no 'Total translation time (s)' line (-report_time)")
    return round(sentences / max(float(total.group(1)), 0.05), 2)


def read_hypotheses(output: Path, expected: int | None) -> list[str]:
    """onmt_translate's output file: one line of pieces a test sentence, in test order; `expected` lines checked."""
    if not output.is_file():
        raise ValueError(f"onmt_translate wrote no output file {output}")
    lines = output.read_text(encoding="utf-8").splitlines()
    if expected is not None and len(lines) != expected:
        raise ValueError(f"onmt_translate wrote {len(lines)} hypotheses for {expected} test sentences, see {output}")
    return lines


def run_opennmt(job: PeerJob) -> PeerRun:
    """Writes the vocabulary and the config, trains, averages the last checkpoints and decodes the test split (every
    pair, checked) at the demo's beam; logs in the job's folder."""
    work, bin_folder, settings = job.work, job.bin_folder, job.settings
    if job.seed < 1:  # utils/misc.set_random_seed seeds torch and the batch shuffler only for a seed above 0
        raise ValueError(f"OpenNMT-py seeds nothing below 1: seed {job.seed} would leave the run unseeded")
    work.mkdir(parents=True, exist_ok=True)
    env, commands = environment(job.threads), []
    pieces = write_vocabulary(job.data / "dict.txt", work / "vocab.txt")
    train_pairs = len((job.data / "train.en").read_text(encoding="utf-8").splitlines())
    checkpoints = work / "checkpoints"
    config = train_config(settings, job.seed, job.data, work / "vocab.txt", checkpoints / "model", train_pairs)
    (work / "train.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    train = [str(bin_folder / "onmt_train"), "-config", str(work / "train.yaml")]
    train_seconds = run_logged(train, work / "train.log", env, commands)
    log_text = (work / "train.log").read_text(encoding="utf-8")
    stats = train_figures(log_text)
    if stats.get("vocab_size") != len(SPECIALS) + len(pieces):  # its " * src vocab size = N" line
        raise ValueError(f"onmt_train built a vocabulary of {stats.get('vocab_size')}, not {len(pieces)} + 4 specials")
    averaged = checkpoints / "averaged.pt"
    newest = newest_numbered(checkpoints, CHECKPOINT, settings["average_last"], "onmt_train")
    average = [str(bin_folder / "onmt_average_models"), "-models", *map(str, newest), "-output", str(averaged)]
    run_logged(average, work / "average.log", env, commands)
    output = work / "test.hyp.de"
    translate = [str(bin_folder / "onmt_translate"), "-model", str(averaged), "-src", str(job.data / "test.en"),
                 "-output", str(output), "-seed", str(job.seed),
                 *translate_flags(settings, longest_source(job.data / "test.en"))]  # fmt: skip
    decode_seconds = run_logged(translate, work / "translate.log", env, commands)
    hypotheses = read_hypotheses(output, job.test_pairs)
    return PeerRun(
        hypotheses=hypotheses,
        train_seconds=train_seconds,
        train_tokens_per_s=tokens_per_second(training_reports(log_text)),
        train_tokens_basis="OpenNMT-py's per-report src tok/s (no </s>) x (1 + sentences / source tokens a batch) "
        "+ tgt tok/s (with </s>), averaged over the reports weighted by their seconds",
        train_stats=stats,
        decode_seconds=decode_seconds,
        decode_sentences_per_s=decoding_speed((work / "translate.log").read_text(encoding="utf-8"), len(hypotheses)),
        averaged=[path.name for path in newest],
        commands=commands,
    )
