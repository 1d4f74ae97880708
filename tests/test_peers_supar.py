"""`benchmarks/peers/supar/`, supar's CRF constituency parser as the parsing peer, checked without its environment:
the bracket files it trains and parses from hold the recipe's own trees, its predicted trees are scored by the
recipe's EVALB (perfect trees score 100, a known prediction its hand-counted figures), its commands train from scratch
on one thread, and its logs are read as supar writes them."""

import ast
import configparser
import datetime

import nltk
import pytest

from hf_vanilla.data.treebank import treebank_splits
from hf_vanilla.parsing.trees import parse_tree

from benchmarks.peers.supar import crf_con

TREES = [
    "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBZ sleeps)) (. .)) )",
    "( (S (NP-SBJ (NNP John)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .)) )",
    "( (S (NP (PRP It)) (VP (VBD rained) (PP-LOC (IN in) (NP (NNP Boston)))) (. .)) )",
    "( (S (NP (-NONE- *-1)) (NP (DT The) (JJ old) (NN man)) (VP (VBD walked) (ADVP (RB slowly))) (. .)) )",
]


@pytest.fixture
def small_splits(tmp_path) -> dict[str, list[str]]:
    """The recipe's splits (`treebank_splits`, its clean-up included) of a tiny treebank in NLTK's layout."""
    folder = tmp_path / "combined"
    folder.mkdir()
    for number, trees in ((1, TREES), (160, TREES[:2]), (180, TREES[1:])):
        (folder / f"wsj_{number:04d}.mrg").write_text("\n".join(trees) + "\n")
    return treebank_splits(folder)


def check_round_trip(splits: dict[str, list[str]], folder) -> None:
    """The written files hold `splits` exactly: one tree a line under TOP, as nltk (supar's reader) reads them, and
    the test words alone beside them."""
    counts = crf_con.write_splits(splits, folder)
    assert counts == {split: len(trees) for split, trees in splits.items()}
    for split, name in crf_con.SPLIT_FILES.items():
        lines = (folder / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(splits[split])
        assert crf_con.read_bracket_file(folder / name) == splits[split]
        for line, tree in zip(lines, splits[split]):
            read = nltk.Tree.fromstring(line)
            assert read.label() == "TOP" and len(read) == 1
            assert read[0].pformat(margin=10**9) == tree
    words = (folder / crf_con.TEST_WORDS).read_text(encoding="utf-8").splitlines()
    assert [nltk.Tree.fromstring(line).leaves() for line in words] == [parse_tree(t).words() for t in splits["test"]]
    assert all(set(t.label() for t in nltk.Tree.fromstring(line).subtrees()) <= {"TOP", "", "_"} for line in words)


def test_bracket_files_hold_the_recipes_trees(small_splits, tmp_path):
    assert small_splits["train"][0] == "(S (NP (DT The) (NN cat)) (VP (VBZ sleeps)) (. .))"  # cleaned, no TOP
    check_round_trip(small_splits, tmp_path / "data")


def test_bracket_files_of_the_demo_splits(treebank_dir, tmp_path):
    """The demo's own splits of NLTK's WSJ sample: 3,396 / 273 / 245 trees, each written and read back unchanged."""
    splits = treebank_splits(treebank_dir)
    assert {split: len(trees) for split, trees in splits.items()} == {"train": 3396, "validation": 273, "test": 245}
    check_round_trip(splits, tmp_path / "data")


def supar_output(tree: str) -> str:
    """`tree` as supar's `predict` writes it: under TOP, every tag `_` (the test words' own)."""
    read = nltk.Tree.fromstring(f"(TOP {tree})")
    for position in read.treepositions("leaves"):
        read[position[:-1]].set_label("_")
    return read.pformat(margin=10**9)


def test_perfect_trees_score_100(small_splits):
    gold = small_splits["test"]
    predicted = [crf_con.recipe_tree(supar_output(tree)) for tree in gold]
    figures = crf_con.score_predictions(predicted, gold)
    assert figures["evalb_f1"] == figures["evalb_precision"] == figures["evalb_recall"] == 100.0
    assert figures["evalb_exact_match"] == 100.0 and figures["repaired_share"] == 0.0
    assert figures["evalb_sentences"] == len(gold)


def test_a_known_prediction_scores_its_hand_count(tmp_path):
    """Sentence 1, gold S(0,3) NP(0,2) VP(2,3) over The cat sleeps (the final `.` uncounted); predicted S(0,3)
    VP(1,3): 1 of 2 predicted brackets right, 1 of 3 gold found. Sentence 2 exact: 4 of 4. So P = 5/6, R = 5/7,
    F1 = 2 * 5 / (6 + 7), exact 1 of 2."""
    gold = [
        "(S (NP (DT The) (NN cat)) (VP (VBZ sleeps)) (. .))",
        "(S (NP (NNP John)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .))",
    ]
    lines = [
        "(TOP (S (_ The) (VP (_ cat) (_ sleeps)) (_ .)))",
        supar_output(gold[1]),
    ]
    (tmp_path / crf_con.PREDICTIONS).write_text("\n".join(lines) + "\n")
    predicted = crf_con.read_bracket_file(tmp_path / crf_con.PREDICTIONS)
    assert predicted[0] == "(S (_ The) (VP (_ cat) (_ sleeps)) (_ .))"
    figures = crf_con.score_predictions(predicted, gold)
    assert figures["evalb_precision"] == pytest.approx(100 * 5 / 6, abs=0.01)
    assert figures["evalb_recall"] == pytest.approx(100 * 5 / 7, abs=0.01)
    assert figures["evalb_f1"] == pytest.approx(100 * 10 / 13, abs=0.01)
    assert figures["evalb_exact_match"] == 50.0 and figures["repaired_share"] == 0.0


def test_predicted_words_must_be_the_gold_trees():
    gold = ["(S (NP (DT The) (NN cat)) (VP (VBZ sleeps)) (. .))", "(S (NP (NNP John)) (VP (VBD sleeps)) (. .))"]
    with pytest.raises(ValueError, match="test tree 1"):
        crf_con.score_predictions(gold[::-1], gold)
    with pytest.raises(ValueError, match="1 predicted trees for 2"):
        crf_con.score_predictions(gold[:1], gold)


def test_commands_train_from_scratch_on_one_thread(tmp_path):
    venv = tmp_path / "venv"
    train = crf_con.train_command(venv, tmp_path, 2)
    assert train[:3] == [str(venv / "bin" / "crf-con"), "--mbr", "train"]
    assert train[train.index("-f") + 1] == "char" and train[train.index("--embed") + 1] == ""
    assert train[train.index("-t") + 1] == "1" and train[train.index("-s") + 1] == "2"
    assert train[train.index("-d") + 1] == "-1" and "bert" not in " ".join(train)
    assert train[train.index("--train") + 1] == str(tmp_path / "train.pid")
    assert "'' --train" in crf_con.shown(train)
    predict = crf_con.predict_command(venv, tmp_path)
    assert predict[predict.index("--data") + 1] == str(tmp_path / crf_con.TEST_WORDS)
    assert crf_con.environment_variables()["OMP_NUM_THREADS"] == "1"


def test_config_file_reads_back_as_supar_reads_it(tmp_path):
    """supar's `Config.load`: every key of every section, its value a Python literal."""
    parser = configparser.ConfigParser()
    parser.read(crf_con.write_config(tmp_path / crf_con.CONFIG_FILE))
    read = {name: ast.literal_eval(value) for section in parser.sections() for name, value in parser.items(section)}
    assert read == crf_con.CONFIG
    assert read["lr"] == 2e-3 and read["batch_size"] == 5000 and read["epochs"] == 5000


TRAIN_LOG = """2026-11-29 00:33:33 INFO Epoch 1 / 5000:
2026-11-29 00:34:21 INFO lr: 1.9963e-03 - loss: 3.5661
2026-11-29 00:34:24 INFO dev:  loss: 3.5091 - UCM:  0.00% LCM:  0.00% UP: 14.46% UR: 23.48% UF: 17.90% LP: 10.54% LR: 17.11% LF: 13.05%
2026-11-29 00:34:26 INFO test: loss: 3.2886 - UCM:  0.00% LCM:  0.00% UP: 12.50% UR: 19.79% UF: 15.32% LP: 10.36% LR: 16.41% LF: 12.70%
2026-11-29 00:34:26 INFO 0:00:52.550878s elapsed (saved)

2026-11-29 00:34:26 INFO Epoch 2 / 5000:
2026-11-29 00:35:10 INFO lr: 1.9926e-03 - loss: 2.1000
2026-11-29 00:35:12 INFO dev:  loss: 3.6000 - UCM:  0.00% LCM:  0.00% UP: 14.00% UR: 23.00% UF: 17.00% LP: 10.00% LR: 17.00% LF: 12.50%
2026-11-29 00:35:14 INFO test: loss: 3.3000 - UCM:  0.00% LCM:  0.00% UP: 12.00% UR: 19.00% UF: 15.00% LP: 10.00% LR: 16.00% LF: 12.00%
2026-11-29 00:35:14 INFO 0:00:48.000000s elapsed

2026-11-29 00:36:00 INFO Epoch 1 saved
2026-11-29 00:36:00 INFO dev:  UCM:  0.00% LCM:  0.00% UP: 14.46% UR: 23.48% UF: 17.90% LP: 10.54% LR: 17.11% LF: 13.05%
2026-11-29 00:36:00 INFO 0:01:40.550878s elapsed, 0:00:50.275439s/epoch
"""  # noqa: E501


def test_logs_are_read_as_supar_writes_them():
    epochs = crf_con.epochs_of(TRAIN_LOG)
    assert [(e["seconds"], e["saved"]) for e in epochs] == [(52.6, True), (48.0, False)]
    assert epochs[0]["dev"]["lf"] == 13.05 and epochs[1]["test"]["lp"] == 10.0
    evaluated = "2026-11-29 00:34:37 INFO loss: 3.3010 - UCM:  0.00% LCM:  0.00% UP: 12.50% UR: 19.79% UF: 15.32% LP: 10.36% LR: 16.41% LF: 12.70%"  # noqa: E501
    assert crf_con.supar_figures(evaluated) == {"loss": 3.301, "ucm": 0.0, "lcm": 0.0, "up": 12.5, "ur": 19.79,
                                                "uf": 15.32, "lp": 10.36, "lr": 16.41, "lf": 12.7}  # fmt: skip
    assert crf_con.decode_speed("2026-11-29 00:34:47 INFO 0:00:01.627646s elapsed, 12.29 Sents/s") == (1.63, 12.29)
    with pytest.raises(ValueError):
        crf_con.supar_figures("no metric here")


def test_record_name_and_settings(tmp_path):
    path = crf_con.record_path(tmp_path, 2, "AMD EPYC", datetime.date(2026, 11, 29))
    assert path.name == "peers-parsing-supar-crf-seed2-2026-11-29-amd-epyc.json"
    rows = crf_con.settings_rows()
    assert {"setting", "hf_vanilla", "peer", "note", "matched"} == set(rows[0])
    assert any(row["setting"] == "scoring" and row["matched"] for row in rows)
    assert crf_con.settings_table().count("\n") == len(rows) + 1


def test_record_has_every_key_of_a_peer_record():
    from benchmarks.environment import environment
    from benchmarks.peers.common import records

    training = crf_con.Training(2, 101.0, True, 1, crf_con.epochs_of(TRAIN_LOG), 99.5)
    figures = {"evalb_precision": 90.0, "evalb_recall": 80.0, "evalb_f1": 84.71, "evalb_exact_match": 20.0,
               "evalb_sentences": 245, "repaired_share": 0.0}  # fmt: skip
    own = {"validation": {"lf": 80.0}, "test": {"lf": 84.0}}
    counts = {"train": 3396, "validation": 273, "test": 245}
    outcome = crf_con.Outcome([["crf-con", "train"]], training, own, (2.0, 122.5), figures, counts, 1000)
    extra = {"wall_s": 130.0, "peak_rss_mb": 900.0, "command": "python -m benchmarks.peers.supar.crf_con --seed 1"}
    record = crf_con.build_record(outcome, 1, 22.0, "wall", environment(), extra)
    assert records.schema_problems(record) == [] and records.known_system(crf_con.SYSTEM)
    assert record["quality"] == {"metric": "f1", "value": 84.71}
    assert record["train_tokens_per_s"] == round(1000 * 2 / (52.6 + 48.0), 1)
    assert record["decode_sentences_per_s"] == 122.5 and record["train_stats"]["best_epoch"] == 1
    assert record["train_stats"]["train_cpu_s"] == 99.5 and record["train_stats"]["bound_clock"] == "wall"
    machine = record["environment"]["machine"]
    assert record["device"]["threads"] == 1 and record["device"]["cpu_count"] == machine["cores"]
