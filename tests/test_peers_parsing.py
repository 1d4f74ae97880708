"""`benchmarks/peers/` on the parsing task: the WSJ demo's (words, linearized tree) pairs exported as its own
whole-piece BPE pieces, the demo preset's settings and fairseq's `transformer` flags derived from them, the recipe's
own repair and EVALB on the peer's outputs, the recipe's commands with and without its tree grammar, and a run through
`python -m benchmarks.peers` with a stand-in peer. A tiny treebank in NLTK's layout is made here; no peer's environment
is needed."""

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

from benchmarks.peers import __main__ as peers_main
from benchmarks.peers import comparison, systems, tasks
from benchmarks.peers import parsing as parsing_task
from benchmarks.peers.common import jobs as peer_jobs
from benchmarks.peers.common import pieces as common_pieces
from benchmarks.peers.common import records
from benchmarks.peers.common import settings as common_settings
from benchmarks.peers.fairseq import parsing_table as fairseq_parse
from benchmarks.peers.fairseq import runner as fairseq_runner
from benchmarks.peers.fairseq import translation_table as fairseq_table
from benchmarks.peers.recipe import runs as recipe_runs
from runs import benchmark, recipe

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
    corpus, name = parsing_task.parse_corpus(SMALL, str(treebank))
    folder = tmp_path_factory.mktemp("parse")
    tokenizer = parsing_task.parse_tokenizer(folder / "tokenizer", corpus["train"], SMALL, name)
    return parsing_task.export_trees(corpus, tokenizer, folder / "data", SMALL, test_limit=3), tokenizer, corpus


def test_the_exported_pieces_are_the_recipe_s_pairs_and_decode_to_its_linearized_trees(exported, treebank):
    export, tokenizer, corpus = exported
    ptb_parse = recipe("ptb_parse")
    assert parsing_task.SIDES == ptb_parse.LANGUAGES
    record = json.loads((export.folder.parent / "tokenizer" / PROVENANCE_FILE).read_text())
    assert (record["whitespace_only"], record["languages"], record["vocab_size"]) == (True, ["words", "tree"], 300)
    for split, stem in (("train", "train"), ("validation", "valid"), ("test", "test")):
        trees = corpus[split]["gold"][:3] if split == "test" else corpus[split]["gold"]
        expected = ptb_parse.as_pairs(trees, "words")["translation"]  # the recipe's own pairs
        for side in parsing_task.SIDES:
            lines = (export.folder / f"{stem}.{side}").read_text(encoding="utf-8").splitlines()
            assert len(lines) == len(expected), (stem, side)
            for line, pair in zip(lines, expected):
                ids = tokenizer.convert_tokens_to_ids(line.split()) + [tokenizer.eos_token_id]
                assert ids == tokenizer(pair[side])["input_ids"]
                assert common_pieces.text_from_pieces(line, tokenizer) == pair[side]
    first = (export.folder / "test.tree").read_text().splitlines()[0]
    assert common_pieces.text_from_pieces(first, tokenizer) == linearize_leaves(corpus["test"]["gold"][0], "words")
    assert common_pieces.text_from_pieces(first, tokenizer) == "(S (NP John )NP (VP saw (NP the dog )NP )VP . )S"
    assert "Ġ)NP" in first.split() or ")NP" in first.split()  # a bracket is one piece: the grammar's vocabulary
    gold = [json.loads(line) for line in (export.folder / parsing_task.GOLD).read_text().splitlines()]
    assert [g["gold"] for g in gold] == corpus["test"]["gold"][:3] and gold[0]["words"] == "John saw the dog ."
    assert export.counts == {"train": 8, "valid": 2, "test": 3} and export.details["unk_pieces"] == 0


def test_the_settings_are_the_demo_preset_s_with_and_without_the_grammar():
    preset, model = PARSING_PRESETS["demo"], SIZES["demo_parsing"]
    grammar, free = parsing_task.parsing_settings(), parsing_task.parsing_settings(grammar=False)
    for name in ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout"):
        assert grammar[name] == free[name] == model[name]
    for name in ("vocab_size", "tokens_per_step", "warmup_steps", "max_steps", "average_last", "save_every"):
        assert grammar[name] == free[name] == preset[name]
    assert (grammar["tree_grammar"], free["tree_grammar"], grammar["tree_leaves"]) == (True, False, "words")
    assert (grammar["treebank"], grammar["max_length"], grammar["lr_scale"]) == ("nltk", None, 0.25)
    assert grammar["peak_lr"] == pytest.approx(0.25 * 128**-0.5 * 400**-0.5)
    decoding = [grammar[k] for k in ("num_beams", "length_penalty", "length_penalty_style", "max_length_offset")]
    assert decoding == [21, 3.0, "gnmt", 300]  # the demo's alpha under the grammar; decoding freely, the paper's
    assert free["length_penalty"] == 0.3 and grammar["cooldown_steps"] == free["cooldown_steps"] == 600
    short = parsing_task.parsing_settings(max_steps=20, save_every=10, eval_every=10)
    assert (short["max_steps"], short["save_every"], short["eval_every"]) == (20, 10, 10)
    with pytest.raises(ValueError, match="not overridable"):
        parsing_task.parsing_settings(dropout=0.3)


@pytest.mark.parametrize("grammar", [True, False])
def test_every_row_s_flag_is_passed_with_its_value(grammar, tmp_path):
    s = parsing_task.parsing_settings(grammar=grammar)
    rows = fairseq_parse.fairseq_parse_rows(s)
    job = peer_jobs.PeerJob(
        tmp_path, tmp_path / "w", tmp_path / "bin", s, 2, None, 4, {}, "parsing", ("words", "tree")
    )
    train, generate = fairseq_runner.task_flags(job)  # what fairseq_peer really runs
    check_rows_against_flags(rows, train + generate)
    assert fairseq_runner.fairseq_table(s) == rows
    given = dict(zip(train, train[1:]))
    assert (given["--arch"], given["--max-tokens"], given["--max-update"], given["--seed"]) == (
        "transformer", "2000", "3000", "2"
    )  # fmt: skip
    assert (given["--encoder-layers"], given["--decoder-embed-dim"], given["--label-smoothing"]) == ("3", "128", "0.1")
    assert (given["--save-interval-updates"], given["--keep-interval-updates"], given["--lr"]) == (
        "100", "3", f"{0.25 * 128**-0.5 * 400**-0.5:.10g}"
    )  # fmt: skip
    assert "--share-all-embeddings" in train and "--user-dir" not in train
    assert dict(zip(generate[::2], generate[1::2])) == {
        "--beam": "21", "--lenpen": "3.0" if grammar else "0.3", "--max-len-a": "1", "--max-len-b": "299",
        "--max-tokens": "4000", "--batch-size": "36", "--required-batch-size-multiple": "1",  # 768 beam rows, beam 21
    }  # fmt: skip
    unmatched = common_settings.render(rows, "fairseq").splitlines()[-1]
    tree = "tree grammar, " if grammar else ""
    assert unmatched == (
        f"fairseq cannot match: {tree}learning rate, batching, validation, initialisation, decoder start, "
        "length penalty."
    )


def test_fairseq_s_outputs_are_scored_by_the_recipe_s_repair_and_evalb(tmp_path, monkeypatch):
    """The same figures as `parse_and_score` on the same raw outputs (its decoding stood in for), and on a tiny case
    EVALB's F1 worked by hand."""
    gold = [TREES[0], TREES[1]]
    words = ["The cat sleeps .", "John saw the dog ."]
    outputs = [
        "(S (NP The cat )NP sleeps . )S",  # brackets S(0,3), NP(0,2) of gold's S, NP, VP: P 2/2, R 2/3
        "(S (NP John )VP (VP saw (NP the dog",  # unbalanced, mislabelled: delinearize repairs it
    ]
    lines = [{"words": w, "gold": g, "leaves": "words"} for w, g in zip(words, gold)]
    (tmp_path / parsing_task.GOLD).write_text("".join(json.dumps(line) + "\n" for line in lines))
    alone = parsing_task.score_parse_file(outputs[:1], _one_item(tmp_path, lines[0]))
    assert alone["quality"] == {"metric": "f1", "value": 80.0}  # 2 * 1 * (2/3) / (1 + 2/3)
    assert (alone["evalb"]["evalb_precision"], alone["evalb"]["evalb_recall"]) == (100.0, 66.67)
    scored = parsing_task.score_parse_file(outputs, tmp_path)
    model = SimpleNamespace(config=SimpleNamespace(tree_leaves="words", linearization="top-down"))
    monkeypatch.setattr("hf_vanilla.evaluation.parsing.generate_texts", lambda *args, **kwargs: outputs)
    recipe_s = parse_and_score(model, None, words, gold, tree_grammar=False, progress=False)
    assert scored["evalb"] == recipe_s.figures and scored["quality"]["value"] == recipe_s.figures["evalb_f1"]
    assert scored["evalb"]["repaired_share"] == 0.5 and scored["evalb"]["evalb_sentences"] == 2
    repaired = "(S (NP (XX John)) (VP (XX saw) (NP (XX the) (XX dog) (XX .))))"  # the missing word added inside
    assert recipe_s.predictions[1] == repaired
    # EVALB leaves the gold tree's punctuation out: all 4 brackets of the second match; 6 of 6 found, of 7 in gold
    assert scored["quality"]["value"] == evalb(gold, [recipe_s.predictions[0], repaired])["f1"] == 92.31
    with pytest.raises(ValueError, match="1 hypotheses for 2 test items"):
        parsing_task.score_parse_file(outputs[:1], tmp_path)
    results = {"evalb_f1": 51.0, "evalb_precision": 50.0, "repaired_share": 0.1, "eval_items": 245, "bleu": 1}
    assert parsing_task.parse_results(results) == {
        "quality": {"metric": "f1", "value": 51.0},
        "evalb": {"evalb_f1": 51.0, "evalb_precision": 50.0, "repaired_share": 0.1},
    }


def _one_item(root: Path, line: dict) -> Path:
    folder = root / "one"
    folder.mkdir()
    (folder / parsing_task.GOLD).write_text(json.dumps(line) + "\n")
    return folder


def test_the_recipe_runs_with_its_grammar_and_without_it(tmp_path):
    args = peers_main.parse_args(["--task", "parsing", "--system", "hf_vanilla-no-grammar", "--test-limit", "20"])
    assert comparison.run_settings(args)["tree_grammar"] is False
    command = recipe_runs.recipe_command(args, tmp_path)
    assert command[6] == "recipes/ptb_parse.py" and command[-3:] == ["--no-tree-grammar", "--eval-sentences", "20"]
    assert command[command.index("--treebank") + 1] == "nltk"
    args = peers_main.parse_args(["--task", "parsing", "--system", "hf_vanilla", "--max-updates", "20"])
    command = recipe_runs.recipe_command(args, tmp_path)
    assert comparison.run_settings(args)["tree_grammar"] is True and "--no-tree-grammar" not in command
    assert command[7:] == [
        "--preset", "demo", "--seed", "1", "--output-dir", str(tmp_path), "--overwrite-output-dir", "--treebank",
        "nltk", "--max-steps", "20",
    ]  # fmt: skip
    args = peers_main.parse_args(["--task", "summarization", "--system", "hf_vanilla-no-copy"])
    assert (
        recipe_runs.recipe_command(args, tmp_path)[-1] == "--no-pointer-generator"
    )  # summarization's variant, as before
    for task in ("parsing", "translation", "summarization"):  # 2 checkpoints saved: those 2 averaged, and kept
        args = peers_main.parse_args(
            ["--task", task, "--system", "fairseq", "--max-updates", "20", "--save-every", "10"]
        )
        assert (comparison.run_settings(args)["average_last"], comparison.run_settings(args)["keep_last"]) == (2, 2), (
            task
        )
    args = peers_main.parse_args(
        ["--task", "parsing", "--system", "fairseq", "--max-updates", "40", "--save-every", "10"]
    )
    assert comparison.run_settings(args)["average_last"] == 3  # the preset's, when as many are saved
    assert tasks.split_system("fairseq-no-copy") == ("fairseq", "-no-copy")
    assert tasks.split_system("hf_vanilla-no-grammar") == ("hf_vanilla", "-no-grammar")


def test_the_translation_recipe_starts_as_fairseq_and_its_normal_init_variant_as_before(tmp_path):
    """The translation recipe draws its first weights and starts its decoder as fairseq does, and fairseq's table
    marks both matched; `hf_vanilla-normal-init` launches it with --init-scheme normal --decoder-start bos, and the
    table then marks them not."""
    rows = {}
    for system in ("hf_vanilla", "hf_vanilla-normal-init"):
        args = peers_main.parse_args(["--task", "translation", "--system", system])
        settings = comparison.run_settings(args)
        command = recipe_runs.recipe_command(args, tmp_path)
        rows[system] = {row.setting: row for row in fairseq_table.fairseq_rows(settings)}
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
    with pytest.raises(SystemExit):
        peers_main.parse_args(["--task", task, "--system", system])
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m benchmarks.peers: error: {error}"


def test_the_grammar_decodes_the_timed_test_split_where_the_recipe_has_it(exported):
    _, tokenizer, _ = exported
    assert parsing_task.parse_keywords({"tree_grammar": False, "tree_leaves": "words"}, tokenizer) == {}
    keywords = parsing_task.parse_keywords({"tree_grammar": True, "tree_leaves": "words"}, tokenizer)
    (processor,) = keywords["processors_for_batch"](["John saw the dog ."])
    assert type(processor).__name__ == "TreeGrammarLogitsProcessor"


def test_a_parsing_run_exports_runs_the_peer_and_scores_its_output(treebank, tmp_path, monkeypatch):
    """`systems.run_peer` with a stand-in peer that writes the test split's exported trees back: the job it is given is
    parsing's, and its output, decoded by the demo's tokenizer, repaired and scored by EVALB, is F1 100."""
    monkeypatch.setattr(parsing_task, "treebank_path", lambda name: treebank)
    monkeypatch.setattr(systems, "ensure_venv", lambda venv, root: tmp_path / "venv" / "bin")
    jobs = []

    def echo(job):
        jobs.append(job)
        lines = (job.data / f"test.{job.sides[1]}").read_text(encoding="utf-8").splitlines()
        return peer_jobs.PeerRun(lines, 1.0, 10.0, "stand-in", {}, 1.0, 4.0)

    monkeypatch.setitem(
        systems.PEERS, "fairseq", systems.Peer("fairseq", systems.PEERS["fairseq"].rows, echo, ("parsing",))
    )
    args = peers_main.parse_args(["--task", "parsing", "--system", "fairseq", "--test-limit", "2", "--seed", "3"])
    figures = systems.run_peer(args, comparison.run_settings(args), tmp_path / "work")
    (job,) = jobs
    assert (job.task, job.sides, job.test_pairs, job.seed, job.settings["tree_grammar"]) == (
        "parsing", ("words", "tree"), 2, 3, True
    )  # fmt: skip
    assert figures["quality"] == {"metric": "f1", "value": 100.0} and figures["evalb"]["evalb_sentences"] == 2
    assert figures["data"]["pairs"] == {"train": 8, "valid": 2, "test": 2}
    assert "fairseq cannot match: tree grammar" in figures["settings_table"]
    hypotheses = (tmp_path / "work" / "fairseq" / "hypotheses.txt").read_text().splitlines()
    assert hypotheses[0] == "John (NP )NP (S saw (VP the (NP dog )NP )VP . )S"  # the demo's trees, in order


def test_a_missing_treebank_ends_the_run_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(parsing_task, "treebank_path", lambda name: tmp_path / "none")
    args = peers_main.parse_args(["--task", "parsing", "--system", "fairseq"])
    with pytest.raises(SystemExit) as stop:
        parsing_task.export_parsing(comparison.run_settings(args), tmp_path, args)
    assert stop.value.code == f"benchmarks.peers: No wsj_*.mrg files under {tmp_path / 'none'}"


def test_a_parsing_record_renders_with_its_f1(tmp_path, monkeypatch):
    render_tables = benchmark("render_tables")
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    for system, f1 in (("fairseq", 40.0), ("hf_vanilla", 51.03), ("hf_vanilla-no-grammar", 45.5)):
        record = {"task": "parsing", "system": system, "seed": 1, "quality": {"metric": "f1", "value": f1},
                  "train_tokens_per_s": 1000.0, "decode_sentences_per_s": 1.0, "wall_s": 900.0, "peak_rss_mb": 900.0,
                  "device": {"processor": "x86_64", "threads": 2, "cpu_count": 2}}  # fmt: skip
        (tmp_path / f"peers-parsing-{system}-seed1.json").write_text(json.dumps(record))
    block = render_tables.verdict_block("parsing")
    assert "| system | machine | seeds | EVALB F1: mean ± sd (least-greatest) |" in block
    table = [line for line in block.splitlines()[2:] if line.startswith("|")]  # the notes below it left out
    rows = [[cell.strip() for cell in line.strip("|").split("|")][:4] for line in table]
    where = "2-core x86_64 (model not recorded), 2 threads"
    assert rows == [
        ["hf_vanilla", where, "1", "51.03"],
        ["hf_vanilla-no-grammar", where, "1", "45.50"],
        ["fairseq", where, "1", "40.00"],
    ]
    assert records.known_system("hf_vanilla-no-grammar")
