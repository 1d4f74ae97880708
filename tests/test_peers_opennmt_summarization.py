"""`benchmarks/peers/opennmt/summarization_table.py` and OpenNMT-py's summarization run: its side of the table with and
without `copy_attn` (and with `copy_attn_force`, its labelled variant), the config and flags derived from the demo
preset's settings, its copy fixes for onmt_translate, and `run_opennmt` on the summarization pieces with stand-in
commands. None of it needs OpenNMT-py's environment (the copy generator's rows: `test_peers_opennmt_copy_rows.py`)."""

import pytest
import yaml
from test_peers_opennmt import (
    TRAIN_LOG,
    assert_rows_are_passed,
    rendered,
    stand_in,
    stand_in_commands,
    translate_options,
)

from hf_vanilla.data.summaries import SIDES

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import comparison, systems
from benchmarks.peers import summarization as summarization_task
from benchmarks.peers import translation as translation_task
from benchmarks.peers.common import jobs as peer_jobs
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.opennmt import runner as opennmt_runner
from benchmarks.peers.opennmt import summarization_table as opennmt_summary

# onmt_translate's rows (the others name onmt_train's options).
DECODING = {"beam", "length penalty", "beam stop", "no repeated n-gram", "shortest summary", "longest summary",
            "decoding batches"}  # fmt: skip
# The rows that name no option (what OpenNMT does without one, a command's own argument, or the exported pieces).
NO_OPTION = {"embedding scale", "output bias", "Adam eps", "source end token", "decoder start", "averaging",
             "lower case", "p_gen inputs", "copied positions", "out-of-vocabulary words", "pointer smoothing",
             "stutter ban", "whole-word copy", "copy decoding", "documents", "subjects", "training pairs",
             "scoring"}  # fmt: skip


@pytest.mark.parametrize("copy", [True, False])
def test_every_row_s_option_is_passed_with_its_value(tmp_path, copy):
    settings = summarization_task.summarization_settings(copy=copy)
    config = opennmt_summary.summary_config(settings, 3, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 1234)
    train = {key: rendered(value) for key, value in config.items() if key != "data"}
    decode = translate_options(opennmt_summary.summary_translate_flags(settings))
    rows = opennmt_summary.opennmt_summary_rows(settings)
    assert_rows_are_passed(rows, train, decode, DECODING, NO_OPTION)
    expected = {
        "enc_layers": "3", "dec_layers": "3", "hidden_size": "128", "heads": "4", "transformer_ff": "512",
        "dropout": "0.1", "attention_dropout": "0.0", "label_smoothing": "0.1", "warmup_steps": "400",
        "learning_rate": "1.0" if copy else "0.25", "decay_method": "noam", "batch_type": "tokens",
        "batch_size": "6000", "valid_batch_size": "6000", "train_steps": "3000", "save_checkpoint_steps": "250",
        "keep_checkpoint": "3", "valid_steps": "500", "src_vocab_size": "4000", "tgt_vocab_size": "4000",
        "share_vocab": "true", "share_decoder_embeddings": "true", "seed": "3", "bucket_size": "1234",
        "copy_attn": "true" if copy else "false",
    }  # fmt: skip
    assert {key: train[key] for key in expected} == expected
    assert train.get("copy_attn_force") == ("false" if copy else None)  # OpenNMT-py's default
    assert config["data"]["corpus_1"]["path_src"] == str(tmp_path / "train.text")
    assert config["data"]["valid"]["path_tgt"] == str(tmp_path / "valid.summary")
    assert decode == {
        "beam_size": "4", "length_penalty": "wu", "alpha": "3.0", "ratio": "0", "block_ngram_repeat": "3",
        "min_length": "1", "max_length": "64", "max_length_ratio": "0", "batch_type": "tokens", "batch_size": "4000",
        "report_time": "true",
    }  # fmt: skip
    copying = "copy mechanism, p_gen inputs, force copy, pointer smoothing, " if copy else ""
    smoothing = ", label smoothing" if copy else ""
    assert common_settings.render(rows, "opennmt-py").splitlines()[-1] == (
        f"opennmt-py cannot match: layer norm, output bias, source end token, {copying}activation dropout{smoothing}, "
        "Adam eps, tokens per update, loss normalisation, batching, validation, initialisation, length penalty, beam "
        "stop, stutter ban" + (", whole-word copy." if copy else ".")
    )
    settings_rows = {row.setting: row for row in rows}
    assert settings_rows["documents"].peer.startswith("the exported pieces cut so (95 pieces")
    assert settings_rows["copy mechanism"].peer.startswith("copy_attn true" if copy else "copy_attn false")
    assert ("copy decoding" in settings_rows) is copy and ("copy rows" in settings_rows) is copy
    if copy:
        assert opennmt_summary.UPSTREAM_COPY_LINE in settings_rows["copy rows"].note  # the line the patch changes
        assert opennmt_summary.OWN_ROWS_COPY_LINE in settings_rows["copy rows"].note
        assert settings_rows["label smoothing"].peer.startswith("label_smoothing 0.1, dropped under copy_attn")
        assert settings_rows["force copy"].peer.startswith("copy_attn_force false (OpenNMT-py's default")
        assert "opennmt-py-force-copy" in settings_rows["force copy"].note


def test_force_copy_is_the_labelled_variant_s_alone(tmp_path):
    settings = {**summarization_task.summarization_settings(), "peer_force_copy": True}
    config = opennmt_summary.summary_config(settings, 3, tmp_path, tmp_path / "vocab.txt", tmp_path / "model", 1234)
    assert config["copy_attn"] is True and config["copy_attn_force"] is True
    rows = {row.setting: row for row in opennmt_summary.opennmt_summary_rows(settings)}
    assert rows["force copy"].matched and rows["force copy"].peer.startswith("copy_attn_force true (the labelled")
    assert not rows["label smoothing"].matched  # dropped under copy_attn all the same
    train = {key: rendered(value) for key, value in config.items() if key != "data"}
    decode = translate_options(opennmt_summary.summary_translate_flags(settings))
    assert_rows_are_passed(list(rows.values()), train, decode, DECODING, NO_OPTION)
    # The recipe without force copy would be matched by OpenNMT-py's default, and not by the variant.
    plain = {**summarization_task.summarization_settings(), "force_copy": False}
    assert next(row for row in opennmt_summary.opennmt_summary_rows(plain) if row.setting == "force copy").matched
    forced = {**plain, "peer_force_copy": True}
    assert not next(row for row in opennmt_summary.opennmt_summary_rows(forced) if row.setting == "force copy").matched


def test_only_a_copying_model_is_trained_and_decoded_with_the_copy_fixes(tmp_path):
    copying = opennmt_summary.translate_program(tmp_path, summarization_task.summarization_settings())
    assert copying == [str(tmp_path / "python"), "-c", opennmt_summary.TRANSLATE_WITH_COPY]
    fixes = (opennmt_summary.COPY_IN_OWN_ROWS, opennmt_summary.GENERATOR_IN_MODEL, opennmt_summary.OWN_DICTIONARIES)
    for fix in (*fixes, "copy=True"):
        assert fix in opennmt_summary.TRANSLATE_WITH_COPY
    training = opennmt_summary.train_program(tmp_path, summarization_task.summarization_settings())
    assert training == [str(tmp_path / "python"), "-c", opennmt_summary.TRAIN_WITH_COPY]
    assert opennmt_summary.COPY_IN_OWN_ROWS in opennmt_summary.TRAIN_WITH_COPY
    plain = opennmt_summary.translate_program(tmp_path, summarization_task.summarization_settings(copy=False))
    assert plain == [str(tmp_path / "onmt_translate")]
    assert opennmt_summary.translate_program(tmp_path, translation_task.demo_settings()) == plain
    for settings in (summarization_task.summarization_settings(copy=False), translation_task.demo_settings()):
        assert opennmt_summary.train_program(tmp_path, settings) == [str(tmp_path / "onmt_train")]
    with pytest.raises(ValueError, match="wu penalty is GNMT's, not 'power'"):
        opennmt_summary.summary_translate_flags(
            {**summarization_task.summarization_settings(), "length_penalty_style": "power"}
        )


def test_each_remaining_sentence_is_folded_with_its_own_dictionary():
    import torch

    calls = []

    def decode_and_generate(self, decoder_in, enc_out, batch, *args, batch_offset=None, **kwargs):
        calls.append((batch["src_ex_vocab"], batch["srclen"], batch_offset, kwargs))
        return "scores"

    found = {"decode_and_generate": decode_and_generate}
    exec(opennmt_summary.OWN_DICTIONARIES, found)
    batch = {"src_ex_vocab": ["first", "second", "third"], "srclen": [3, 2, 4]}
    # Sentence 1 has finished: the remaining two, at indices 0 and 1, are the batch's sentences 0 and 2.
    assert found["own_dictionaries"](None, "in", "out", batch, batch_offset=torch.tensor([0, 2]), step=3) == "scores"
    found["own_dictionaries"](None, "in", "out", batch, step=0)  # the gold score's call has no offset
    assert [vocab for vocab, _, _, _ in calls] == [["first", "third"], ["first", "second", "third"]]
    assert [length for _, length, _, _ in calls] == [[3, 2, 4], [3, 2, 4]]  # the rest of the batch as it was
    assert calls[0][3] == {"step": 3} and batch["src_ex_vocab"] == ["first", "second", "third"]  # not changed


def test_the_copy_generator_s_weights_are_loaded_under_their_full_names():
    loaded = []

    def load_state_dict(self, checkpoint, *args, **kwargs):
        loaded.append((dict(checkpoint["model"]), checkpoint["generator"], args, kwargs))
        return "model"

    found = {"load_state_dict": load_state_dict}
    exec(opennmt_summary.GENERATOR_IN_MODEL, found)
    checkpoint = {"model": {"decoder.w": 1}, "generator": {"linear.weight": 2, "linear_copy.bias": 3}, "vocab": 4}
    assert found["generator_in_model"](None, checkpoint, strict=True) == "model"
    ((model, generator, args, kwargs),) = loaded
    assert model == {"decoder.w": 1, "generator.linear.weight": 2, "generator.linear_copy.bias": 3}
    assert generator is None and kwargs == {"strict": True} and checkpoint["vocab"] == 4


def summary_job(tmp_path, bin_folder, copy: bool, task: str = "summarization"):
    """A summarization job of 3 pieces, 2 training pairs and 2 test e-mails, the demo's settings at 20 updates."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    (data / "dict.txt").write_text("Ġa 1\nĠb 1\nĠc 1\n", encoding="utf-8")
    for stem in ("train", "valid", "test"):
        (data / f"{stem}.text").write_text("Ġa Ġb Ġc Ġa\nĠc\n", encoding="utf-8")
        (data / f"{stem}.summary").write_text("Ġa Ġb\nĠc\n", encoding="utf-8")
    settings = summarization_task.summarization_settings(copy=copy, max_steps=20, save_every=5, eval_every=10)
    return peer_jobs.PeerJob(data, tmp_path / "work", bin_folder, settings, 1, 1, 2, {"source": 5, "target": 3}, task,
                           SIDES)  # fmt: skip


@pytest.mark.parametrize("copy", [True, False])
def test_a_summarization_run_trains_on_the_text_and_summary_pieces_and_decodes_with_the_summary_flags(tmp_path, copy):
    bin_folder = stand_in_commands(tmp_path / "bin")
    # The copy fixes' `python -c SCRIPT ARGS` stand in as onmt_train or onmt_translate (the SCRIPT's main) with ARGS.
    stand_in(bin_folder, "python", 'case "$2" in *onmt.bin.train*) command=onmt_train;; *) command=onmt_translate;; '
             'esac\nshift 2\nexec "$(dirname "$0")/$command" "$@"\n')  # fmt: skip
    job = summary_job(tmp_path, bin_folder, copy)
    done = opennmt_runner.run_opennmt(job)
    assert done.hypotheses == ["Ġh0", "Ġh1"] and (job.work / "test.hyp.summary").is_file()
    config = yaml.safe_load((job.work / "train.yaml").read_text(encoding="utf-8"))
    assert config["copy_attn"] is copy and config["data"]["corpus_1"]["path_tgt"].endswith("train.summary")
    assert config["bucket_size"] == 2 and config["learning_rate"] == (1.0 if copy else 0.25)
    train, translate = done.commands[0], done.commands[2]
    assert train.startswith(str(bin_folder / ("python -c" if copy else "onmt_train")))
    assert (opennmt_summary.TRAIN_WITH_COPY in train) is copy and train.endswith(f"-config {job.work / 'train.yaml'}")
    assert config.get("copy_attn_force") is (False if copy else None)
    assert translate.startswith(str(bin_folder / ("python -c" if copy else "onmt_translate")))
    assert f"-src {job.data / 'test.text'}" in translate and "-block_ngram_repeat 3" in translate
    assert "-max_length 64 " in translate and "-min_length 1 " in translate


def test_opennmt_runs_translation_and_summarization_and_refuses_the_rest(tmp_path):
    summary = summarization_task.summarization_settings()
    assert opennmt_runner.opennmt_table(summary) == opennmt_summary.opennmt_summary_rows(summary)
    translation = translation_task.demo_settings()
    assert opennmt_runner.opennmt_table(translation) == opennmt_runner.opennmt_rows(translation)
    job = summary_job(tmp_path, stand_in_commands(tmp_path / "bin"), True, task="parsing")
    with pytest.raises(ValueError, match="OpenNMT-py runs translation and summarization here, not parsing"):
        opennmt_runner.run_opennmt(job)


def test_the_trainable_parameters_are_read_from_the_training_log():
    line = "[2026-11-27 02:01:49,748 INFO] Trainable parameters = {'torch.float32': 1318401, 'torch.float16': 0}\n"
    assert opennmt_runner.train_figures(line + TRAIN_LOG)["trainable_parameters"] == 1318401
    assert "trainable_parameters" not in opennmt_runner.train_figures(TRAIN_LOG)


@pytest.mark.parametrize(
    "system, copy, forced",
    [("opennmt-py", True, False), ("opennmt-py-no-copy", False, False), ("opennmt-py-force-copy", True, True)],
)
def test_the_command_line_runs_opennmt_s_summarization_with_and_without_copying(system, copy, forced, tmp_path):
    args = peers_main.parse_args(
        ["--task", "summarization", "--system", system, "--max-updates", "20", "--save-every", "10"]
    )
    settings = comparison.run_settings(args)
    assert (settings["task"], settings["pointer_generator"], settings["max_steps"]) == ("summarization", copy, 20)
    assert settings["average_last"] == 2  # the two checkpoints a short check of 20 updates saves
    assert bool(settings.get("peer_force_copy")) is forced
    peer = systems.PEERS[system.removesuffix("-no-copy")]
    assert peer.venv == "opennmt" and peer.run is opennmt_runner.run_opennmt
    assert peer.rows(settings)[0].peer.startswith("encoder_type transformer")
    config = opennmt_summary.summary_config(settings, 1, tmp_path, tmp_path / "v", tmp_path / "m", 10)
    assert config.get("copy_attn_force") is (forced if copy else None)


@pytest.mark.parametrize(
    "task, system, error",
    [
        ("parsing", "opennmt-py", "opennmt-py runs translation, summarization here, not parsing"),
        ("translation", "opennmt-py-no-copy", "translation has no variant without a copy mechanism: --system "
         "opennmt-py, without -no-copy"),
        ("parsing", "opennmt-py-no-copy", "opennmt-py runs translation, summarization here, not parsing"),
        ("translation", "opennmt-py-force-copy", "opennmt-py-force-copy runs summarization here, not translation"),
    ],
)  # fmt: skip
def test_a_task_opennmt_does_not_run_is_refused(task, system, error, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--task", task, "--system", system])
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m benchmarks.peers: error: {error}"


@pytest.mark.parametrize("system", ["opennmt-py-force-copy-no-copy", "sockeye-post-norm-normal-init"])
def test_a_peer_s_labelled_variant_takes_no_task_variant_besides(system, capsys):
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--task", "summarization", "--system", system])
    assert f"argument --system: invalid choice: '{system}'" in capsys.readouterr().err
