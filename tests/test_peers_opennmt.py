"""`benchmarks/peers/opennmt/`: OpenNMT-py's side of the table and the options it passes, its vocabulary file,
its logs read back, and `run_opennmt` end to end with stand-in commands. None of it needs OpenNMT-py's environment."""

import json
import re
import stat
from pathlib import Path

import pytest
from datasets import Dataset

from hf_vanilla.tokenization import SPECIAL_TOKENS
from hf_vanilla.training.schedule import inverse_sqrt_lr

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import systems
from benchmarks.peers import translation as translation_task
from benchmarks.peers.common import jobs as peer_jobs
from benchmarks.peers.common import pieces as common_pieces
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.opennmt import runner as opennmt_runner

# The settings of rows that name no option of onmt_train or onmt_translate (what OpenNMT does without one, or a
# command's own argument: the averaging, checked in the end-to-end test).
NO_OPTION = {"embedding scale", "output bias", "Adam eps", "source end token", "decoder start", "averaging",
             "training pairs", "held-out pairs"}  # fmt: skip
DECODING = {"beam", "length penalty", "beam stop", "maximum output", "decoding batches"}  # onmt_translate's rows

# Lines of a real onmt_train log (utils/statistics.Statistics.output, the logger's "[time level]" prefix) and of
# onmt_translate -report_time (translate/translator.py), from the short check of 20 updates (the second report at 12
# seconds instead of 10, so that its window weighs more than the first).
TRAIN_LOG = """[2026-11-27 02:01:49,748 INFO]  * src vocab size = 4000
[2026-11-27 02:01:49,748 INFO]  * tgt vocab size = 4000
[2026-11-27 02:01:50,039 INFO] Starting training on CPU, could be very slow
[2026-11-27 02:01:53,990 INFO] Saving checkpoint /tmp/peers-check/opennmt-py/opennmt-py/checkpoints/model_step_5.pt
[2026-11-27 02:01:55,446 INFO] Step 10/   20; acc: 0.0; ppl: 3951.7; xent: 8.3; lr: 0.00006; sents:     582; bsz: 1703/1804/58; 3149/3336 tok/s;      5 sec;
[2026-11-27 02:01:56,039 INFO] Validation perplexity: 3684.84
[2026-11-27 02:01:56,039 INFO] Validation accuracy: 0.0736269
[2026-11-27 02:01:59,700 INFO] Step 20/   20; acc: 3.9; ppl: 3473.0; xent: 8.2; lr: 0.00012; sents:     638; bsz: 1687/1813/64; 3967/4264 tok/s;     12 sec;
[2026-11-27 02:02:00,226 INFO] Validation perplexity: 3154.09
"""  # noqa: E501
TRANSLATE_LOG = """[2026-11-27 02:02:07,379 INFO] PRED SCORE: -6.5858, PRED PPL: 724.77 NB SENTENCES: 20
[2026-11-27 02:02:07,379 INFO] Total translation time (s): 0.0
[2026-11-27 02:02:07,379 INFO] Average translation time (ms): 1.6
[2026-11-27 02:02:07,379 INFO] Tokens per second: 0.0
"""


def rendered(value) -> str:
    """A config value as a row writes it: a one-item list as its item, a flag as `true` or `false`."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return str(value).lower() if isinstance(value, bool) else str(value)


def named_options(peer: str, known: set[str]) -> dict[str, str | None]:
    """The options a row's peer text names (a segment's first word that is a `known` option or looks like one,
    snake_case), each with the value written after it (None where a description in brackets follows instead)."""
    named = {}
    for segment in re.split(r"[,;:]\s+", peer):
        words = segment.split()
        if words and (words[0] in known or re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", words[0])):
            value = words[1].rstrip(",;:)") if len(words) > 1 and not words[1].startswith("(") else None
            named[words[0]] = value
    return named


def translate_options(flags: list[str]) -> dict[str, str]:
    """onmt_translate's `-name value` flags as a dict (`true` for a flag without a value)."""
    options, index = {}, 0
    while index < len(flags):
        has_value = index + 1 < len(flags) and not flags[index + 1].startswith("-")
        options[flags[index].lstrip("-")] = flags[index + 1] if has_value else "true"
        index += 2 if has_value else 1
    return options


def assert_rows_are_passed(rows, train: dict, decode: dict, decoding: set[str], no_option: set[str]) -> None:
    """Every option a row names is in onmt_train's config (`train`) or, for a row of `decoding`, onmt_translate's
    flags (`decode`), with the value the row names; a row names an option unless it is one of `no_option`."""
    for row in rows:
        options = decode if row.setting in decoding else train
        named = named_options(row.peer, set(train) | set(decode))
        assert bool(named) != (row.setting in no_option), (row.setting, row.peer)
        for option, value in named.items():
            assert option in options, (row.setting, option, "named but not passed")
            assert value is None or value == options[option], (row.setting, option, value, options[option])


def test_every_row_s_option_is_passed_with_its_value(tmp_path):
    settings = translation_task.demo_settings()
    config = opennmt_runner.train_config(settings, 3, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 1234)
    train = {key: rendered(value) for key, value in config.items() if key != "data"}
    decode = translate_options(opennmt_runner.translate_flags(settings, 30))
    assert_rows_are_passed(opennmt_runner.opennmt_rows(settings), train, decode, DECODING, NO_OPTION)
    expected = {
        "enc_layers": "3", "dec_layers": "3", "hidden_size": "128", "word_vec_size": "128", "heads": "4",
        "transformer_ff": "512", "dropout": "0.1", "attention_dropout": "0.0", "label_smoothing": "0.1",
        "norm_eps": "1e-05", "adam_beta1": "0.9", "adam_beta2": "0.98", "learning_rate": "0.5", "warmup_steps": "400",
        "decay_method": "noam", "max_grad_norm": "0", "batch_type": "tokens", "batch_size": "2000",
        "batch_size_multiple": "1", "accum_count": "1", "normalization": "tokens", "train_steps": "2400",
        "save_checkpoint_steps": "100", "keep_checkpoint": "3", "valid_steps": "600", "seed": "3",
        "param_init": "0", "param_init_glorot": "true", "share_vocab": "true", "share_embeddings": "true",
        "share_decoder_embeddings": "true", "add_qkvbias": "true", "add_ffnbias": "true", "position_encoding": "true",
        "position_encoding_type": "SinusoidalInterleaved", "src_vocab_size": "4000", "vocab_size_multiple": "1",
        "bucket_size": "1234", "num_workers": "0",
    }  # fmt: skip
    assert {key: train[key] for key in expected} == expected
    assert "gpu_ranks" not in config and config["data"]["corpus_1"]["transforms"] == []
    assert decode == {
        "beam_size": "4", "length_penalty": "wu", "alpha": "0.6", "ratio": "0", "max_length": "79",
        "max_length_ratio": "0", "batch_type": "tokens", "batch_size": "4000", "report_time": "true",
    }  # fmt: skip
    rendered_table = common_settings.render(opennmt_runner.opennmt_rows(settings), "opennmt-py")
    assert rendered_table.splitlines()[-1] == (
        "opennmt-py cannot match: layer norm, output bias, source end token, decoder start, activation dropout, Adam "
        "eps, tokens per update, loss normalisation, batching, initialisation, length penalty, beam stop, maximum "
        "output."
    )


def test_without_validation_no_valid_corpus_is_read(tmp_path):
    settings = {**translation_task.demo_settings(), "eval_every": 0}
    config = opennmt_runner.train_config(settings, 1, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 10)
    assert "valid" not in config["data"] and config["valid_steps"] > config["train_steps"]


def test_noam_with_these_options_is_the_recipe_s_schedule(tmp_path):
    settings = translation_task.demo_settings()
    config = opennmt_runner.train_config(settings, 1, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 10)

    def noam(step: int) -> float:  # onmt/utils/optimizers.noam_decay times learning_rate; step 1 is the first update
        warmup, size = config["warmup_steps"], config["hidden_size"]
        return config["learning_rate"] * size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5))

    for update in (1, 2, 399, 400, 401, 2400):
        expected = inverse_sqrt_lr(update, settings["d_model"], settings["warmup_steps"], settings["lr_scale"])
        assert noam(update) == pytest.approx(expected, rel=1e-12)
    assert noam(400) == pytest.approx(settings["peak_lr"])


def read_vocabulary(path: Path, specials: tuple[str, ...], maximum_size: int) -> list[str]:
    """What OpenNMT-py 3.5.1 builds from `path` (inputters/inputter.build_vocab, _read_vocab_file): the lines split
    on b"\\n" less the last, `token count` when the first line has a count; its specials not in the file in front,
    then the tokens in file order (pyonmttok.build_vocab_from_tokens with equal counts), `maximum_size` in all."""
    lines = [line.decode("utf-8") for line in path.read_bytes().split(b"\n")][:-1]
    first = lines[0].split(None, 1)
    tokens = [line.split(None, 1)[0] for line in lines] if len(first) == 2 and first[-1].isdigit() else lines
    return ([s for s in specials if s not in tokens] + tokens)[:maximum_size]


def test_the_vocabulary_file_gives_opennmt_the_tokenizer_s_pieces_in_order(tmp_path):
    pairs = [("In the beginning God created the heavens.", "Im Anfang schuf Gott die Himmel."),
             ("God saw the light, and it was good.", "Und Gott sah das Licht, daß es gut war.")]  # fmt: skip
    train = Dataset.from_list([{"translation": {"en": en, "de": de}} for en, de in pairs])
    tokenizer = translation_task.translation_tokenizer(tmp_path / "tokenizer", train, 300)
    common_pieces.write_dictionary(tokenizer, tmp_path / "dict.txt")
    pieces = opennmt_runner.write_vocabulary(tmp_path / "dict.txt", tmp_path / "vocab.txt")
    in_order = [piece for piece in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
                if piece not in SPECIAL_TOKENS]  # fmt: skip
    assert pieces == in_order
    settings = {**translation_task.demo_settings(), "vocab_size": len(tokenizer)}
    config = opennmt_runner.train_config(settings, 1, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 2)
    built = read_vocabulary(tmp_path / "vocab.txt", opennmt_runner.SPECIALS, config["src_vocab_size"])
    assert built == [*opennmt_runner.SPECIALS, *in_order] and len(built) == len(tokenizer)
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()[0] == f"{in_order[0]}\t1"
    for clash in ("<blank>", "a\uffe8b"):
        (tmp_path / "dict.txt").write_text(f"x 1\n{clash} 1\n", encoding="utf-8")
        with pytest.raises(ValueError, match="specials or as source features"):
            opennmt_runner.write_vocabulary(tmp_path / "dict.txt", tmp_path / "refused.txt")


def test_opennmt_s_logs_are_read_back(tmp_path):
    reports = opennmt_runner.training_reports(TRAIN_LOG)
    assert [r["step"] for r in reports] == [10.0, 20.0] and reports[1]["bsz_sents"] == 64.0
    assert opennmt_runner.train_figures(TRAIN_LOG) == {
        "step": 20.0, "acc": 3.9, "ppl": 3473.0, "xent": 8.2, "lr": 0.00012, "sec": 12.0,
        "src_tok_per_s_mean": 3558.0, "tgt_tok_per_s_mean": 3800.0, "valid_ppl": 3154.09, "vocab_size": 4000,
    }  # fmt: skip
    # Report 1: 5 s at 3149 * (1 + 58/1703) + 3336; report 2: 7 s at 3967 * (1 + 64/1687) + 4264.
    first, second = 3149 * (1 + 58 / 1703) + 3336, 3967 * (1 + 64 / 1687) + 4264
    assert opennmt_runner.tokens_per_second(reports) == round((5 * first + 7 * second) / 12, 1)
    assert opennmt_runner.decoding_speed(TRANSLATE_LOG, 20) == round(1000 / 1.6, 2)
    assert opennmt_runner.decoding_speed("[2026 INFO] Total translation time (s): 4.1\n", 20) == round(20 / 4.1, 2)
    with pytest.raises(ValueError, match="no 'Total translation time"):
        opennmt_runner.decoding_speed("", 20)
    with pytest.raises(ValueError, match="no 'Step N"):
        opennmt_runner.train_figures("[2026 INFO] Starting training on CPU, could be very slow\n")
    (tmp_path / "hyp").write_text("Ġa Ġb\n\nĠc\n", encoding="utf-8")
    assert opennmt_runner.read_hypotheses(tmp_path / "hyp", 3) == ["Ġa Ġb", "", "Ġc"]
    with pytest.raises(ValueError, match="wrote 3 hypotheses for 4 test sentences"):
        opennmt_runner.read_hypotheses(tmp_path / "hyp", 4)
    with pytest.raises(ValueError, match="wrote no output file"):
        opennmt_runner.read_hypotheses(tmp_path / "missing", 4)


def stand_in(folder: Path, name: str, script: str) -> None:
    """An executable `folder/name` running the bash `script` (a stand-in for one of OpenNMT-py's commands)."""
    path = folder / name
    path.write_text("#!/bin/bash\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def stand_in_commands(folder: Path, train_exit: int = 0, hypotheses: int = 2, vocabulary: int = 7) -> Path:
    """onmt_train (checkpoints of updates 5-20 and `TRAIN_LOG` with a `vocabulary` of 4 + 3 pieces),
    onmt_average_models and onmt_translate (`hypotheses` lines) as bash scripts; returns their folder."""
    folder.mkdir()
    train_log = TRAIN_LOG.replace("= 4000", f"= {vocabulary}")
    stand_in(folder, "onmt_train", f"""[ {train_exit} = 0 ] || {{ echo broken; exit {train_exit}; }}
checkpoints="$(dirname "$2")/checkpoints"; mkdir -p "$checkpoints"
for n in 5 10 15 20; do : > "$checkpoints/model_step_$n.pt"; done
cat <<'LOG'\n{train_log}LOG\n""")  # fmt: skip
    stand_in(folder, "onmt_average_models", ': > "${@: -1}"\n')
    lines = "".join(f"Ġh{i}\\n" for i in range(hypotheses))
    stand_in(folder, "onmt_translate", f"""while [ $# -gt 0 ]; do [ "$1" = -output ] && out="$2"; shift; done
printf '{lines}' > "$out"\ncat <<'LOG'\n{TRANSLATE_LOG}LOG\n""")  # fmt: skip
    return folder


def peer_job(tmp_path: Path, bin_folder: Path):
    """A job of 3 pieces, 2 training pairs and 2 test pairs, the demo's settings shortened to 20 updates."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    (data / "dict.txt").write_text("Ġa 1\nĠb 1\nĠc 1\n", encoding="utf-8")
    for stem in ("train", "valid", "test"):
        for side in ("en", "de"):
            (data / f"{stem}.{side}").write_text("Ġa Ġb\nĠc\n", encoding="utf-8")
    settings = translation_task.demo_settings(max_steps=20, save_every=5, eval_every=10)
    return peer_jobs.PeerJob(data, tmp_path / "work", bin_folder, settings, 1, 1, 2, {"source": 5, "target": 5})


def test_a_run_trains_averages_the_newest_checkpoints_and_decodes_every_test_pair(tmp_path):
    job = peer_job(tmp_path, stand_in_commands(tmp_path / "bin"))
    done = opennmt_runner.run_opennmt(job)
    assert done.hypotheses == ["Ġh0", "Ġh1"]
    assert done.averaged == ["model_step_10.pt", "model_step_15.pt", "model_step_20.pt"]
    assert done.decode_sentences_per_s == round(1000 / 1.6, 2) and done.train_stats["vocab_size"] == 7
    assert done.train_tokens_per_s == opennmt_runner.tokens_per_second(opennmt_runner.training_reports(TRAIN_LOG))
    assert [command.split()[0].rsplit("/", 1)[-1] for command in done.commands] == [
        "onmt_train", "onmt_average_models", "onmt_translate"]  # fmt: skip
    assert "-max_length 52" in done.commands[2]  # the longest test source, 2 pieces + </s>, + 49
    assert (job.work / "vocab.txt").read_text(encoding="utf-8") == "Ġa\t1\nĠb\t1\nĠc\t1\n"


def test_a_failed_command_another_vocabulary_a_missing_hypothesis_or_an_unused_seed_raises(tmp_path):
    job = peer_job(tmp_path / "seed", stand_in_commands(tmp_path / "seed-bin"))
    with pytest.raises(ValueError, match="seeds nothing below 1"):
        opennmt_runner.run_opennmt(type(job)(**{**vars(job), "seed": 0}))
    with pytest.raises(RuntimeError, match=r"onmt_train failed \(3\)(.|\n)*broken"):
        opennmt_runner.run_opennmt(
            peer_job(tmp_path / "failed", stand_in_commands(tmp_path / "failed-bin", train_exit=3))
        )
    with pytest.raises(ValueError, match=r"built a vocabulary of 8, not 3 \+ 4 specials"):
        opennmt_runner.run_opennmt(
            peer_job(tmp_path / "vocab", stand_in_commands(tmp_path / "vocab-bin", vocabulary=8))
        )
    with pytest.raises(ValueError, match="wrote 1 hypotheses for 2 test sentences"):
        opennmt_runner.run_opennmt(
            peer_job(tmp_path / "short", stand_in_commands(tmp_path / "short-bin", hypotheses=1))
        )


def test_opennmt_py_is_a_peer_of_the_command_line():
    assert systems.PEERS["opennmt-py"].venv == "opennmt" and "opennmt-py" in systems.READY
    assert peers_main.parse_args(["--system", "opennmt-py"]).system == "opennmt-py"


def test_the_beam_stop_study_decodes_the_record_s_own_command_made_on_this_boot(tmp_path):
    """`benchmarks.studies.opennmt_beam_stop` re-runs the onmt_translate command of the seed's record made on this
    boot (another boot's speeds do not compare), only its output and -n_best changed, and scores each sentence's
    first of its n_best lines."""
    from benchmarks.studies import opennmt_beam_stop as study

    translate = "/v/bin/onmt_translate -model /m/averaged.pt -src /d/test.en -output /w/test.hyp.de -beam_size 4"
    for date, boot in (("2026-11-27", "other"), ("2026-11-29-amd-epyc", "this")):
        record = {"environment": {"machine": {"boot_id": boot}}, "peer_commands": ["/v/bin/onmt_train -x", translate]}
        (tmp_path / f"peers-translation-opennmt-py-seed2-{date}.json").write_text(json.dumps(record))
    command = study.recorded_command(2, tmp_path, boot="this")
    assert command == translate.split()
    assert study.with_n_best(command, Path("/t/out"), 4) == [
        *translate.replace("/w/test.hyp.de", "/t/out").split(), "-n_best", "4"]  # fmt: skip
    with pytest.raises(SystemExit, match="no opennmt-py translation record of seed 2 on this boot"):
        study.recorded_command(2, tmp_path, boot="a third")
    assert study.first_hypotheses(["a1", "a2", "b1", "b2"], 2) == ["a1", "b1"]
    with pytest.raises(ValueError, match="3 output lines are not 2 a sentence"):
        study.first_hypotheses(["a1", "a2", "b1"], 2)
