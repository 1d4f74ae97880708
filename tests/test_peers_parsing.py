"""`benchmarks/peers/` on the parsing task: the WSJ demo's (words, linearized tree) pairs exported as its own
whole-piece BPE pieces, the demo preset's settings and fairseq's `transformer` flags derived from them, the recipe's
own repair and EVALB on the peer's outputs, the recipe's commands with and without its tree grammar, and a run through
`run.py` with a stand-in peer. A tiny treebank in NLTK's layout is made here; no peer's environment is needed."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_peers_summarization import check_rows_against_flags

from hf_vanilla.configuration_vanilla import SIZES
from hf_vanilla.evaluation.evalb import evalb
from hf_vanilla.evaluation.parsing import parse_and_score
from hf_vanilla.parsing import linearize_leaves
from hf_vanilla.tokenization import PROVENANCE_FILE
from hf_vanilla.training.presets import PARSING_PRESETS

from runs import benchmark, peer_module, recipe

TREES = [
    "( (S (NP (DT The) (NN cat)) (VP (VBZ sleeps)) (. .)) )",
    "( (S (NP (NNP John)) (VP (VBD saw) (NP (DT the) (NN dog))) (. .)) )",
    "( (S (NP (PRP It)) (VP (VBD rained) (PP (IN in) (NP (NNP Boston)))) (. .)) )",
    "( (S (NP (DT The) (JJ old) (NN man)) (VP (VBD walked) (ADVP (RB slowly))) (. .)) )",
]
SMALL = {"treebank": "nltk", "tree_leaves": "words", "vocab_size": 300}


def write_treebank(root: Path) -> Path:
    """NLTK's layout (`combined/wsj_NNNN.mrg`): files 0001-0002 train, 0160 validation, 0180-0181 test."""
    folder = root / "combined"
    folder.mkdir(parents=True)
    for number, trees in ((1, TREES), (2, TREES[::-1]), (160, TREES[:2]), (180, TREES[1:]), (181, TREES[:1])):
        (folder / f"wsj_{number:04d}.mrg").write_text("\n".join(trees) + "\n")
    return folder


@pytest.fixture(scope="module")
def treebank(tmp_path_factory) -> Path:
    return write_treebank(tmp_path_factory.mktemp("wsj"))


@pytest.fixture(scope="module")
def exported(treebank, tmp_path_factory):
    pieces = peer_module("parse_pieces")
    corpus, name = pieces.parse_corpus(SMALL, str(treebank))
    folder = tmp_path_factory.mktemp("parse")
    tokenizer = pieces.parse_tokenizer(folder / "tokenizer", corpus["train"], SMALL, name)
    return pieces.export_trees(corpus, tokenizer, folder / "data", SMALL, test_limit=3), tokenizer, corpus


def test_the_exported_pieces_are_the_recipe_s_pairs_and_decode_to_its_linearized_trees(exported, treebank):
    export, tokenizer, corpus = exported
    pieces, data, ptb_parse = peer_module("parse_pieces"), peer_module("split_pieces"), recipe("ptb_parse")
    assert pieces.SIDES == ptb_parse.LANGUAGES
    record = json.loads((export.folder.parent / "tokenizer" / PROVENANCE_FILE).read_text())
    assert (record["whitespace_only"], record["languages"], record["vocab_size"]) == (True, ["words", "tree"], 300)
    for split, stem in (("train", "train"), ("validation", "valid"), ("test", "test")):
        trees = corpus[split]["gold"][:3] if split == "test" else corpus[split]["gold"]
        expected = ptb_parse.as_pairs(trees, "words")["translation"]  # the recipe's own pairs
        for side in pieces.SIDES:
            lines = (export.folder / f"{stem}.{side}").read_text(encoding="utf-8").splitlines()
            assert len(lines) == len(expected), (stem, side)
            for line, pair in zip(lines, expected):
                ids = tokenizer.convert_tokens_to_ids(line.split()) + [tokenizer.eos_token_id]
                assert ids == tokenizer(pair[side])["input_ids"]
                assert data.text_from_pieces(line, tokenizer) == pair[side]
    first = (export.folder / "test.tree").read_text().splitlines()[0]
    assert data.text_from_pieces(first, tokenizer) == linearize_leaves(corpus["test"]["gold"][0], "words")
    assert data.text_from_pieces(first, tokenizer) == "(S (NP John )NP (VP saw (NP the dog )NP )VP . )S"
    assert "Ġ)NP" in first.split() or ")NP" in first.split()  # a bracket is one piece: the grammar's vocabulary
    gold = [json.loads(line) for line in (export.folder / pieces.GOLD).read_text().splitlines()]
    assert [g["gold"] for g in gold] == corpus["test"]["gold"][:3] and gold[0]["words"] == "John saw the dog ."
    assert export.counts == {"train": 8, "valid": 2, "test": 3} and export.details["unk_pieces"] == 0


def test_the_settings_are_the_demo_preset_s_with_and_without_the_grammar():
    table = peer_module("parse_table")
    preset, model = PARSING_PRESETS["demo"], SIZES["demo_parsing"]
    grammar, free = table.parsing_settings(), table.parsing_settings(grammar=False)
    for name in ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout"):
        assert grammar[name] == free[name] == model[name]
    for name in ("vocab_size", "tokens_per_step", "warmup_steps", "max_steps", "average_last", "save_every"):
        assert grammar[name] == free[name] == preset[name]
    assert (grammar["tree_grammar"], free["tree_grammar"], grammar["tree_leaves"]) == (True, False, "words")
    assert (grammar["treebank"], grammar["max_length"], grammar["lr_scale"]) == ("nltk", None, 0.25)
    assert grammar["peak_lr"] == pytest.approx(0.25 * 128**-0.5 * 400**-0.5)
    decoding = [grammar[k] for k in ("num_beams", "length_penalty", "length_penalty_style", "max_length_offset")]
    assert decoding == [21, 0.3, "gnmt", 300]
    short = table.parsing_settings(max_steps=20, save_every=10, eval_every=10)
    assert (short["max_steps"], short["save_every"], short["eval_every"]) == (20, 10, 10)
    with pytest.raises(ValueError, match="not overridable"):
        table.parsing_settings(dropout=0.3)


@pytest.mark.parametrize("grammar", [True, False])
def test_every_row_s_flag_is_passed_with_its_value(grammar, tmp_path):
    table, fairseq, process = peer_module("parse_table"), peer_module("fairseq_peer"), peer_module("peer_process")
    s = table.parsing_settings(grammar=grammar)
    rows = table.fairseq_parse_rows(s)
    job = process.PeerJob(tmp_path, tmp_path / "w", tmp_path / "bin", s, 2, None, 4, {}, "parsing", ("words", "tree"))
    train, generate = fairseq.task_flags(job)  # what fairseq_peer really runs
    check_rows_against_flags(rows, train + generate)
    assert fairseq.fairseq_table(s) == rows
    given = dict(zip(train, train[1:]))
    assert (given["--arch"], given["--max-tokens"], given["--max-update"], given["--seed"]) == (
        "transformer", "2000", "2400", "2"
    )  # fmt: skip
    assert (given["--encoder-layers"], given["--decoder-embed-dim"], given["--label-smoothing"]) == ("3", "128", "0.1")
    assert (given["--save-interval-updates"], given["--keep-interval-updates"], given["--lr"]) == (
        "100", "3", f"{0.25 * 128**-0.5 * 400**-0.5:.10g}"
    )  # fmt: skip
    assert "--share-all-embeddings" in train and "--user-dir" not in train
    assert dict(zip(generate[::2], generate[1::2])) == {
        "--beam": "21", "--lenpen": "0.3", "--max-len-a": "1", "--max-len-b": "299", "--max-tokens": "4000",
        "--batch-size": "36", "--required-batch-size-multiple": "1",  # 768 beam rows at beam 21
    }  # fmt: skip
    unmatched = peer_module("settings_table").render(rows, "fairseq").splitlines()[-1]
    tree = "tree grammar, " if grammar else ""
    assert unmatched == (
        f"fairseq cannot match: {tree}learning rate, batching, validation, initialisation, decoder start, "
        "length penalty."
    )


def test_fairseq_s_outputs_are_scored_by_the_recipe_s_repair_and_evalb(tmp_path, monkeypatch):
    """The same figures as `parse_and_score` on the same raw outputs (its decoding stood in for), and on a tiny case
    EVALB's F1 worked by hand."""
    pieces = peer_module("parse_pieces")
    gold = [TREES[0], TREES[1]]
    words = ["The cat sleeps .", "John saw the dog ."]
    outputs = [
        "(S (NP The cat )NP sleeps . )S",  # brackets S(0,3), NP(0,2) of gold's S, NP, VP: P 2/2, R 2/3
        "(S (NP John )VP (VP saw (NP the dog",  # unbalanced, mislabelled: delinearize repairs it
    ]
    lines = [{"words": w, "gold": g, "leaves": "words"} for w, g in zip(words, gold)]
    (tmp_path / pieces.GOLD).write_text("".join(json.dumps(line) + "\n" for line in lines))
    alone = pieces.score_parse_file(outputs[:1], _one_item(tmp_path, lines[0]))
    assert alone["quality"] == {"metric": "f1", "value": 80.0}  # 2 * 1 * (2/3) / (1 + 2/3)
    assert (alone["evalb"]["evalb_precision"], alone["evalb"]["evalb_recall"]) == (100.0, 66.67)
    scored = pieces.score_parse_file(outputs, tmp_path)
    model = SimpleNamespace(config=SimpleNamespace(tree_leaves="words"))
    monkeypatch.setattr("hf_vanilla.evaluation.parsing.generate_texts", lambda *args, **kwargs: outputs)
    recipe_s = parse_and_score(model, None, words, gold, tree_grammar=False, progress=False)
    assert scored["evalb"] == recipe_s.figures and scored["quality"]["value"] == recipe_s.figures["evalb_f1"]
    assert scored["evalb"]["repaired_share"] == 0.5 and scored["evalb"]["evalb_sentences"] == 2
    repaired = "(S (NP (XX John)) (VP (XX saw) (NP (XX the) (XX dog) (XX .))))"  # the missing word added inside
    assert recipe_s.predictions[1] == repaired
    # EVALB leaves the gold tree's punctuation out: all 4 brackets of the second match; 6 of 6 found, of 7 in gold
    assert scored["quality"]["value"] == evalb(gold, [recipe_s.predictions[0], repaired])["f1"] == 92.31
    with pytest.raises(ValueError, match="1 hypotheses for 2 test items"):
        pieces.score_parse_file(outputs[:1], tmp_path)
    results = {"evalb_f1": 51.0, "evalb_precision": 50.0, "repaired_share": 0.1, "eval_items": 245, "bleu": 1}
    assert pieces.parse_results(results) == {
        "quality": {"metric": "f1", "value": 51.0},
        "evalb": {"evalb_f1": 51.0, "evalb_precision": 50.0, "repaired_share": 0.1},
    }


def _one_item(root: Path, line: dict) -> Path:
    folder = root / "one"
    folder.mkdir()
    (folder / peer_module("parse_pieces").GOLD).write_text(json.dumps(line) + "\n")
    return folder


def test_the_recipe_runs_with_its_grammar_and_without_it(tmp_path):
    run = peer_module("run")
    args = run.parse_args(["--task", "parsing", "--system", "hf_vanilla-no-grammar", "--test-limit", "20"])
    assert run.run_settings(args)["tree_grammar"] is False
    command = run.recipe_command(args, tmp_path)
    assert command[6] == "recipes/ptb_parse.py" and command[-3:] == ["--no-tree-grammar", "--eval-sentences", "20"]
    assert command[command.index("--treebank") + 1] == "nltk"
    args = run.parse_args(["--task", "parsing", "--system", "hf_vanilla", "--max-updates", "20"])
    command = run.recipe_command(args, tmp_path)
    assert run.run_settings(args)["tree_grammar"] is True and "--no-tree-grammar" not in command
    assert command[7:] == [
        "--preset", "demo", "--seed", "1", "--output-dir", str(tmp_path), "--overwrite-output-dir", "--treebank",
        "nltk", "--max-steps", "20",
    ]  # fmt: skip
    args = run.parse_args(["--task", "summarization", "--system", "hf_vanilla-no-copy"])
    assert run.recipe_command(args, tmp_path)[-1] == "--no-pointer-generator"  # summarization's variant, as before
    for task in ("parsing", "translation", "summarization"):  # 2 checkpoints saved: those 2 averaged, and kept
        args = run.parse_args(["--task", task, "--system", "fairseq", "--max-updates", "20", "--save-every", "10"])
        assert (run.run_settings(args)["average_last"], run.run_settings(args)["keep_last"]) == (2, 2), task
    args = run.parse_args(["--task", "parsing", "--system", "fairseq", "--max-updates", "40", "--save-every", "10"])
    assert run.run_settings(args)["average_last"] == 3  # the preset's, when as many are saved
    assert run.split_system("fairseq-no-copy") == ("fairseq", "-no-copy")
    assert run.split_system("hf_vanilla-no-grammar") == ("hf_vanilla", "-no-grammar")


def test_the_translation_recipe_starts_as_fairseq_and_its_normal_init_variant_as_before(tmp_path):
    """The translation recipe draws its first weights and starts its decoder as fairseq does, and fairseq's table
    marks both matched; `hf_vanilla-normal-init` launches it with --init-scheme normal --decoder-start bos, and the
    table then marks them not."""
    run = peer_module("run")
    rows = {}
    for system in ("hf_vanilla", "hf_vanilla-normal-init"):
        args = run.parse_args(["--task", "translation", "--system", system])
        settings = run.run_settings(args)
        command = run.recipe_command(args, tmp_path)
        rows[system] = {row.setting: row for row in run.fairseq_rows(settings)}
        assert command[7:] == [
            "--preset", "demo", "--seed", "1", "--output-dir", str(tmp_path), "--overwrite-output-dir",
            *(["--init-scheme", "normal", "--decoder-start", "bos"] if system.endswith("-normal-init") else []),
        ]  # fmt: skip
    for setting in ("initialisation", "decoder start"):
        assert rows["hf_vanilla"][setting].matched and not rows["hf_vanilla-normal-init"][setting].matched
    assert rows["hf_vanilla"]["decoder start"].hf_vanilla == "</s> then the target shifted right (--decoder-start eos)"
    assert rows["hf_vanilla"]["initialisation"].hf_vanilla.startswith("--init-scheme fairseq")
    assert rows["hf_vanilla-normal-init"]["decoder start"].hf_vanilla == (
        "<s> then the target shifted right (--decoder-start bos)"
    )
    unchanged = set(rows["hf_vanilla"]) - {"initialisation", "decoder start"}
    assert all(rows["hf_vanilla"][name] == rows["hf_vanilla-normal-init"][name] for name in unchanged)


@pytest.mark.parametrize(
    "task, system, error",
    [
        ("parsing", "fairseq-no-grammar", "fairseq has no variant without the tree grammar (only hf_vanilla's parsing "
         "recipe has it): --system fairseq, without -no-grammar"),
        ("parsing", "hf_vanilla-no-copy", "parsing has no variant without a copy mechanism: --system hf_vanilla, "
         "without -no-copy"),
        ("summarization", "hf_vanilla-no-grammar", "summarization has no variant without the tree grammar: --system "
         "hf_vanilla, without -no-grammar"),
        ("translation", "fairseq-no-grammar", "translation has no variant without the tree grammar: --system fairseq, "
         "without -no-grammar"),
        ("translation", "fairseq-normal-init", "fairseq has no variant with N(0, 0.02) projections and a <s> "
         "decoder start (only hf_vanilla's translation recipe has it): --system fairseq, without -normal-init"),
        ("parsing", "hf_vanilla-normal-init", "parsing has no variant with N(0, 0.02) projections and a <s> decoder "
         "start: --system hf_vanilla, without -normal-init"),
        ("parsing", "opennmt-py", "opennmt-py runs translation, summarization here, not parsing"),
    ],
)  # fmt: skip
def test_a_variant_the_task_or_the_system_lacks_is_refused(task, system, error, monkeypatch, capsys):
    run = peer_module("run")
    monkeypatch.setattr("sys.argv", ["run.py"])
    with pytest.raises(SystemExit):
        run.parse_args(["--task", task, "--system", system])
    assert capsys.readouterr().err.splitlines()[-1] == f"run.py: error: {error}"


def test_the_grammar_decodes_the_timed_test_split_where_the_recipe_has_it(exported):
    _, tokenizer, _ = exported
    pieces = peer_module("parse_pieces")
    assert pieces.parse_keywords({"tree_grammar": False, "tree_leaves": "words"}, tokenizer) == {}
    keywords = pieces.parse_keywords({"tree_grammar": True, "tree_leaves": "words"}, tokenizer)
    (processor,) = keywords["processors_for_batch"](["John saw the dog ."])
    assert type(processor).__name__ == "TreeGrammarLogitsProcessor"


def test_a_parsing_run_exports_runs_the_peer_and_scores_its_output(treebank, tmp_path, monkeypatch):
    """`run.run_peer` with a stand-in peer that writes the test split's exported trees back: the job it is given is
    parsing's, and its output, decoded by the demo's tokenizer, repaired and scored by EVALB, is F1 100."""
    run, process = peer_module("run"), peer_module("peer_process")
    monkeypatch.setattr(peer_module("parse_pieces"), "treebank_path", lambda name: treebank)
    monkeypatch.setattr(run, "ensure_venv", lambda venv, root: tmp_path / "venv" / "bin")
    jobs = []

    def echo(job):
        jobs.append(job)
        lines = (job.data / f"test.{job.sides[1]}").read_text(encoding="utf-8").splitlines()
        return process.PeerRun(lines, 1.0, 10.0, "stand-in", {}, 1.0, 4.0)

    monkeypatch.setitem(run.PEERS, "fairseq", run.Peer("fairseq", run.PEERS["fairseq"].rows, echo, ("parsing",)))
    args = run.parse_args(["--task", "parsing", "--system", "fairseq", "--test-limit", "2", "--seed", "3"])
    figures = run.run_peer(args, run.run_settings(args), tmp_path / "work")
    (job,) = jobs
    assert (job.task, job.sides, job.test_pairs, job.seed, job.settings["tree_grammar"]) == (
        "parsing", ("words", "tree"), 2, 3, True
    )  # fmt: skip
    assert figures["quality"] == {"metric": "f1", "value": 100.0} and figures["evalb"]["evalb_sentences"] == 2
    assert figures["data"]["pairs"] == {"train": 8, "valid": 2, "test": 2}
    assert "fairseq cannot match: tree grammar" in figures["settings_table"]
    hypotheses = (tmp_path / "work" / "fairseq" / "hypotheses.txt").read_text().splitlines()
    assert hypotheses[0] == "(S (NP John )NP (VP saw (NP the dog )NP )VP . )S"


def test_a_missing_treebank_ends_the_run_in_one_line(tmp_path, monkeypatch):
    run = peer_module("run")
    monkeypatch.setattr(peer_module("parse_pieces"), "treebank_path", lambda name: tmp_path / "none")
    args = run.parse_args(["--task", "parsing", "--system", "fairseq"])
    with pytest.raises(SystemExit) as stop:
        run.export_parsing(run.run_settings(args), tmp_path, args)
    assert stop.value.code == f"run.py: No wsj_*.mrg files under {tmp_path / 'none'}"


def test_a_parsing_record_renders_with_its_f1(tmp_path, monkeypatch):
    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    for system, f1 in (("fairseq", 40.0), ("hf_vanilla", 51.03), ("hf_vanilla-no-grammar", 45.5)):
        record = {"task": "parsing", "system": system, "seed": 1, "quality": {"metric": "f1", "value": f1},
                  "train_tokens_per_s": 1000.0, "decode_sentences_per_s": 1.0, "wall_s": 900.0, "peak_rss_mb": 900.0,
                  "device": {"processor": "x86_64", "threads": 2, "cpu_count": 2}}  # fmt: skip
        (tmp_path / f"peers-parsing-{system}-seed1.json").write_text(json.dumps(record))
    rows = [line for line in render_tables.peers_block().splitlines() if line.startswith("| parsing")]
    assert rows == [
        "| parsing | hf_vanilla | 1 | F1 51.03 | 1,000.0 | 15.0 | 1.00 | 900 |",
        "| parsing | hf_vanilla-no-grammar | 1 | F1 45.50 | 1,000.0 | 15.0 | 1.00 | 900 |",
        "| parsing | fairseq | 1 | F1 40.00 | 1,000.0 | 15.0 | 1.00 | 900 |",
    ]
    assert peer_module("peer_record").known_system("hf_vanilla-no-grammar")
