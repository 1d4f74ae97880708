"""OpenNMT-py 3.5.1 on the exported pieces: its vocabulary file written from the tokenizer's pieces (no
onmt_build_vocab), one YAML config for onmt_train, the last checkpoints averaged by onmt_average_models, the test
split decoded by onmt_translate; the figures read back from their logs. The same steps run translation and
summarization (with OpenNMT's `copy_attn`, or without it for `opennmt-py-no-copy`); each task's config, flags and
side-by-side table (`opennmt_table`) are `translation_table`'s (translation) or `summarization_table`'s, and so are
the programs that train and decode a copying model (onmt_train and onmt_translate with 3.5.1's copy faults patched:
`train_program`, `translate_program`)."""

import re
from pathlib import Path

import yaml

from benchmarks.peers.common.jobs import PeerJob, PeerRun, environment, newest_numbered, run_logged
from benchmarks.peers.common.pieces import longest_source, read_dictionary
from benchmarks.peers.common.settings import Row
from benchmarks.peers.opennmt.summarization_table import (
    opennmt_summary_rows,
    summary_config,
    summary_translate_flags,
    train_program,
    translate_program,
)
from benchmarks.peers.opennmt.translation_table import opennmt_rows, train_config, translate_flags

# OpenNMT's own specials (opts.py `default_specials`), put in front of the vocabulary file's tokens, ids 0-3.
SPECIALS = ("<unk>", "<blank>", "<s>", "</s>")
# Its source-feature separator (inputters/text_utils.parse_features splits every token on it).
FEATURE_SEPARATOR = "\uffe8"
CHECKPOINT = re.compile(r"model_step_(\d+)\.pt")  # onmt_train's checkpoint files
# onmt_train's report (utils/statistics.Statistics.output): "Step %s; acc: %2.1f; ppl: %5.1f; xent: %2.1f; lr: %7.5f;
# sents: %7.0f; bsz: %4.0f/%4.0f/%2.0f; %3.0f/%3.0f tok/s; %6.0f sec;" (bsz: source/target tokens/sentences a batch).
REPORT = re.compile(
    r"Step\s+(?P<step>\d+)(?:/\s*\d+)?; acc:\s*(?P<acc>[\d.]+); ppl:\s*(?P<ppl>[\d.]+|inf); xent:\s*(?P<xent>[\d.]+); "
    r"lr:\s*(?P<lr>[\d.e+-]+); sents:\s*(?P<sents>\d+); "
    r"bsz:\s*(?P<bsz_src>\d+)/\s*(?P<bsz_tgt>\d+)/\s*(?P<bsz_sents>\d+); "
    r"\s*(?P<src_tok_s>\d+)/\s*(?P<tgt_tok_s>\d+) tok/s;\s*(?P<sec>\d+) sec;"
)
TASKS = ("translation", "summarization")  # the tasks OpenNMT-py runs here


def opennmt_table(settings: dict) -> list[Row]:
    """OpenNMT-py's side of the settings table for the task of `settings`: `opennmt_rows` (translation) or
    `opennmt_summary_rows`."""
    if settings.get("task") == "summarization":
        return opennmt_summary_rows(settings)
    return opennmt_rows(settings)


def task_config(job: PeerJob, vocabulary: Path, save_model: Path, train_pairs: int) -> dict:
    """onmt_train's config for the job's task: translation's (`train_config`) or summarization's (`summary_config`,
    with or without copying as the job's settings say)."""
    if job.task not in TASKS:
        raise ValueError(f"OpenNMT-py runs {' and '.join(TASKS)} here, not {job.task}")
    if job.task == "summarization":
        return summary_config(job.settings, job.seed, job.data, vocabulary, save_model, train_pairs)
    return train_config(job.settings, job.seed, job.data, vocabulary, save_model, train_pairs, job.sides)


def task_translate_flags(job: PeerJob) -> list[str]:
    """onmt_translate's decoding flags for the job's task: translation's (one output limit from the longest test
    source) or summarization's (the summary's own limits)."""
    if job.task == "summarization":
        return summary_translate_flags(job.settings)
    return translate_flags(job.settings, longest_source(job.data / f"test.{job.sides[0]}"))


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


def training_reports(log_text: str) -> list[dict]:
    """onmt_train's per-report figures (`REPORT`), as numbers, in log order."""
    return [{k: float(v) for k, v in m.groupdict().items()} for m in REPORT.finditer(log_text)]


def train_figures(log_text: str) -> dict:
    """The training's figures from its log: the last report's (step, acc, ppl, xent, lr, sec), the last validation
    perplexity, the vocabulary size it built, its trainable float32 parameters (`copy_attn` adds its gate's
    hidden_size + 1), and the means of its source and target tokens a second."""
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
    parameters = re.search(r"Trainable parameters = \{'torch\.float32': (\d+)", log_text)  # train_single.py
    if parameters:
        figures["trainable_parameters"] = int(parameters.group(1))
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
    """Writes the vocabulary and the config of the job's task (`task_config`), trains, averages the last checkpoints
    and decodes the test split (every pair, checked) with the task's flags at the demo's beam; logs in the job's
    folder."""
    work, bin_folder, settings = job.work, job.bin_folder, job.settings
    if job.seed < 1:  # utils/misc.set_random_seed seeds torch and the batch shuffler only for a seed above 0
        raise ValueError(f"OpenNMT-py seeds nothing below 1: seed {job.seed} would leave the run unseeded")
    work.mkdir(parents=True, exist_ok=True)
    env, commands, (source, target) = environment(job.threads), [], job.sides
    pieces = write_vocabulary(job.data / "dict.txt", work / "vocab.txt")
    train_pairs = len((job.data / f"train.{source}").read_text(encoding="utf-8").splitlines())
    checkpoints = work / "checkpoints"
    config = task_config(job, work / "vocab.txt", checkpoints / "model", train_pairs)
    (work / "train.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    train = [*train_program(bin_folder, settings), "-config", str(work / "train.yaml")]
    train_seconds = run_logged(train, work / "train.log", env, commands)
    log_text = (work / "train.log").read_text(encoding="utf-8")
    stats = train_figures(log_text)
    if stats.get("vocab_size") != len(SPECIALS) + len(pieces):  # its " * src vocab size = N" line
        raise ValueError(f"onmt_train built a vocabulary of {stats.get('vocab_size')}, not {len(pieces)} + 4 specials")
    averaged = checkpoints / "averaged.pt"
    newest = newest_numbered(checkpoints, CHECKPOINT, settings["average_last"], "onmt_train")
    average = [str(bin_folder / "onmt_average_models"), "-models", *map(str, newest), "-output", str(averaged)]
    run_logged(average, work / "average.log", env, commands)
    output = work / f"test.hyp.{target}"
    translate = [*translate_program(bin_folder, settings), "-model", str(averaged),
                 "-src", str(job.data / f"test.{source}"), "-output", str(output), "-seed", str(job.seed),
                 *task_translate_flags(job)]  # fmt: skip
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
