"""Model cards rendered from a recipe's `results.json` and the model's own configuration, never by hand.

The Jinja templates are package data (`hf_vanilla/templates/`). Rendering is strict: an unfilled template field, a
result missing from `results.json` or a card whose `model-index` figures differ from `results.json` is an error.
"""

import json
from pathlib import Path

import jinja2
from huggingface_hub import EvalResult, ModelCard, ModelCardData
from transformers import GenerationConfig

from .configuration_vanilla import VanillaTransformerConfig
from .data.summaries import HUB_SUMMARIES
from .decoding_settings import DECODING
from .evaluation.rouge import MULTI_REFERENCE_RULE, figure_names
from .parsing.linearization import linearize_leaves

TEMPLATES = Path(__file__).resolve().parent / "templates"

# The paper's figures beside which each checkpoint's own are shown (Tables 2, 3 and 4).
PAPER_TRANSLATION = {
    "base": dict(name="base", layers="6 + 6", sizes="512 / 2048 / 8", dropout=0.1, parameters="65M", bleu=27.3),
    "big": dict(name="big", layers="6 + 6", sizes="1024 / 4096 / 16", dropout=0.3, parameters="213M", bleu=28.4),
    # Section 6.1: the big model on English-French, dropout 0.1 (32k word-pieces; its size is not given).
    "big_enfr": dict(
        name="big, English-French", layers="6 + 6", sizes="1024 / 4096 / 16", dropout=0.1, parameters="–", bleu=41.8
    ),
}


def paper_translation(results: dict, config) -> dict:
    """The paper's row to show beside a translation model: English-French big for a French target, else the
    English-German base or big by width."""
    if results.get("target_lang") == "fr":
        return PAPER_TRANSLATION["big_enfr"]
    return PAPER_TRANSLATION["big" if config.d_model >= 1024 else "base"]


COMMON_RESULTS = (
    "task",
    "preset",
    "training_preset",
    "steps",
    "epochs",
    "train_seconds",
    "train_tokens_per_second",
    "eval_split",
    "averaged_checkpoints",
    "num_processes",
    "mixed_precision",
    "hardware",
    "parameters",
)
TASK_RESULTS = {
    "translation": (
        "dataset",
        "source_lang",
        "target_lang",
        "sacrebleu",
        "sacrebleu_signature",
        "tokenized_bleu",
        "eval_sentences",
        "padding_fraction",
    ),
    "parsing": (
        "treebank",
        "evalb_f1",
        "evalb_precision",
        "evalb_recall",
        "evalb_exact_match",
        "evalb_sentences",
        "repaired_share",
    ),
    "summarization": (
        "dataset",
        "rouge1",
        "rouge2",
        "rougeL",
        "rougeLsum",
        "eval_items",
        "pointer_generator",
        "truncated",
    ),
}
ROUGE_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}


class CardError(ValueError):
    """The results cannot fill a card, or a card does not match its results."""


def _check_results(results: dict) -> str:
    task = results.get("task")
    if task not in TASK_RESULTS:
        raise CardError(f"results.json has task {task!r}; expected one of {sorted(TASK_RESULTS)}")
    missing = [key for key in COMMON_RESULTS + TASK_RESULTS[task] if results.get(key) is None]
    if missing:
        raise CardError(f"results.json lacks {', '.join(missing)}: cannot fill the {task} model card")
    return task


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


def expected_metrics(results: dict) -> dict[str, float]:
    """The figures a card's `model-index` must carry, keyed by metric type."""
    task = _check_results(results)
    if task == "translation":
        return {"sacrebleu": results["sacrebleu"], "bleu": results["tokenized_bleu"]}
    if task == "summarization":  # the single-reference figures, and the multi-reference ones where there are some
        names = figure_names(several=results.get("rouge1_multi_reference") is not None)
        return {name: results[name] for name in names}
    return {
        "f1": results["evalb_f1"],
        "precision": results["evalb_precision"],
        "recall": results["evalb_recall"],
        "exact_match": results["evalb_exact_match"],
    }


def _card_data(results: dict, model_name: str) -> ModelCardData:
    metrics = expected_metrics(results)
    if results["task"] == "translation":
        dataset = Path(results["dataset"]).name
        languages = [results["source_lang"], results["target_lang"]]
        names = {"sacrebleu": "sacreBLEU", "bleu": "BLEU (tokenized, compound split)"}
        task, task_name, tags = "translation", "Translation", ["translation"]
    elif results["task"] == "summarization":
        corpus = summarization_corpus(results["dataset"])
        dataset, languages = corpus["name"], ["en"]
        names = {
            **ROUGE_NAMES,
            **{f"{k}_multi_reference": f"{v} (best of all references)" for k, v in ROUGE_NAMES.items()},
        }
        task, task_name, tags = "summarization", "Summarization", ["summarization"]
        if results["pointer_generator"]:
            tags.append("pointer-generator")
    else:
        dataset = Path(results["treebank"]).name
        languages = ["en"]
        names = {
            "f1": "EVALB F1",
            "precision": "EVALB precision",
            "recall": "EVALB recall",
            "exact_match": "exact match",
        }
        task, task_name, tags = "text2text-generation", "Constituency parsing", ["constituency-parsing"]
    evaluations = [
        EvalResult(
            task_type=task,
            task_name=task_name,
            dataset_type=dataset,
            dataset_name=dataset,
            dataset_split=results["eval_split"],
            metric_type=key,
            metric_name=names[key],
            metric_value=value,
        )
        for key, value in metrics.items()
    ]
    return ModelCardData(
        model_name=model_name,
        language=languages,
        license=summarization_corpus(results["dataset"])["licence"] if task == "summarization" else "apache-2.0",
        library_name="transformers",
        pipeline_tag=task if task in ("translation", "summarization") else "text2text-generation",
        tags=["hf_vanilla", "transformer", "attention-is-all-you-need", *tags],
        eval_results=evaluations,
    )


def render_model_card(
    results: dict, config: VanillaTransformerConfig, generation: GenerationConfig, repo_id: str
) -> ModelCard:
    """The card of a model trained by a recipe: `results` is its `results.json`, `config` and `generation` its saved
    configuration and generation configuration, `repo_id` where it is (to be) published."""
    task = _check_results(results)
    training = results["training_preset"]
    model_name = repo_id.split("/")[-1]
    optional = {
        "eval_only": False,
        "init_from": None,
        "best_step": None,
        "best_valid_loss": None,
        "lowercase": False,
        "copyable": None,
        "lead_baseline": None,
    }
    context = {
        **optional,
        **results,
        "model_name": model_name,
        "repo_id": repo_id,
        "config": config,
        "generation": generation,
        "training": training,
        "card_data": _card_data(results, model_name).to_yaml(),
        "train_time": _duration(results["train_seconds"]),
        "tokens_per_second": f"{results['train_tokens_per_second']:,.0f}",
        "parameters": f"{results['parameters'] / 1e6:.1f}M",
        "reproducibility": REPRODUCIBILITY,
        "final_model_text": _final_model_text(results),
        "best_text": _best_text(results),
        "start_text": _start_text(config),
        "filters_text": _filters_text(results.get("filters") or {}),
    }
    if task == "translation":
        context.update(_translation_context(results, config))
    elif task == "summarization":
        corpus = summarization_corpus(results["dataset"])
        context.update(
            dataset_name=corpus["name"],
            dataset_citation=corpus["citation"],
            data_licence=corpus["rights"],
            limits=corpus["limits"],
            example=corpus["example"],
            truncation_summary=_truncation_summary(results["truncated"], results["eval_split"]),
            copyable_text=_copyable_text(results.get("copyable") or {}, results["eval_split"]),
            multi_reference_rule=MULTI_REFERENCE_RULE,
        )
    else:
        full_wsj = Path(results["treebank"]).name != "nltk"
        context.update(
            full_wsj=full_wsj,
            split_rule="sections 02-21 train, 22 development, 23 test"
            if full_wsj
            else "NLTK's 10% sample: files 0001-0159 train, 0160-0179 development, 0180-0199 test",
            repaired_percent=round(100 * results["repaired_share"], 1),
            paper_changes=_parsing_changes(results, config, generation),
            tree_grammar=results.get("tree_grammar", False),  # runs before the grammar existed decoded freely
            linearized=linearize_leaves(EXAMPLE_TREE, config.tree_leaves, config.linearization),
            example="The cat sat on the mat .",
            limits="Input must be tokenized as the Penn Treebank is (punctuation split off, `n't` separate). "
            "Trained on newswire; expect lower accuracy on other genres.",
        )
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    try:
        content = environment.get_template(f"{task}.md.j2").render(**context)
    except jinja2.TemplateNotFound as error:
        raise CardError(f"card template {error.name} not found in {TEMPLATES}") from error
    except jinja2.UndefinedError as error:
        raise CardError(f"the {task} card has an unfilled field: {error.message}") from error
    card = ModelCard(content)
    check_card(card, results)
    return card


def check_card(card: ModelCard, results: dict) -> None:
    """Raises `CardError` unless the card's `model-index` carries exactly the figures of `results`."""
    expected = expected_metrics(results)
    found = {result.metric_type: result.metric_value for result in (card.data.eval_results or [])}
    if found != expected:
        raise CardError(f"the card's results {found} do not match results.json {expected}")


def load_results(folder: Path) -> dict:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise CardError(f"{path} not found: a card is rendered from a recipe's results")
    return json.loads(path.read_text())


# How far a card's figures hold: the same for every task (the spread measured for the demos is in docs/experiments.md).
REPRODUCIBILITY = (
    "These are one run's figures. The same command and seed give them again on the same machine and software, a run "
    "killed and resumed included; on another processor or thread count float32 sums run in another order, the small "
    "differences grow over training, and the figures move (hf_vanilla's CPU demos, the same command and seed on the "
    "machines and thread counts seen: sacreBLEU 22.1-22.7, parsing F1 49.0-52.5 under the parsing demo's former "
    "preset; docs/corpora.md in the repository)."
)


def _training_words(training: dict) -> int | None:
    """The most source words of a training pair (None or 0: no limit); a run from before the training limit was a
    flag of its own used the held-out one."""
    words = training.get("max_train_source_words")
    return training.get("max_source_words") if words is None else words


def _translation_limits(results: dict) -> str:
    if results["dataset"] == "bible":
        words = _training_words(results["training_preset"])
        verses = f"Bible verses of at most {words} words" if words else "Bible verses"
        return (
            f"A demonstration model: trained for minutes on a CPU on {verses} (World English Bible → Elberfelder "
            "1932). It translates biblical English in that style and little else."
        )
    return (
        "Trained on news, parliament and web-crawled text; expect lower quality on other domains. Sentences much "
        "longer than those seen in training degrade; the output may omit or repeat content like any NMT system."
    )


def _data_licence(dataset: str) -> str:
    if dataset == "bible":
        return "its training text pairs the World English Bible and the Elberfelder 1932, both in the public domain."
    if dataset == "wmt14":
        return "the WMT14 training corpora (Europarl, Common Crawl, News Commentary) come under their own terms."
    return f"the training data (`{dataset}`) come under their own terms."


# The summarization corpora a card can name: how to cite them and on what terms a model trained on them is released
# (`summarization_corpus`). AESLC: ../shared/data/aeslc/README.md and LICENSE.md.
_APACHE = "The weights are released under the Apache-2.0 licence of hf_vanilla; "
SUMMARIZATION_CORPORA = {
    "aeslc": dict(
        name="aeslc",
        citation="the Annotated Enron Subject Line Corpus: Zhang & Tetreault, ACL 2019, *This Email Could Save Your "
        "Life: Introducing the Task of Email Subject Line Generation* (e-mail body → the subject its sender wrote).",
        licence="cc-by-nc-sa-4.0",
        rights="The code of hf_vanilla is Apache-2.0, but these weights were trained on AESLC, licensed CC BY-NC-SA "
        "4.0 (research and non-commercial use, attribution, derivatives under the same licence): the model inherits "
        "those terms and is released under CC BY-NC-SA 4.0, non-commercial and share-alike. Cite Zhang & Tetreault "
        "(2019) when you report on it.",
        limits="Trained on Enron e-mails of 2000-2002 (some with quoted-printable leftovers such as `=20`): it "
        "writes short business subject lines and little else.",
        example="Please find attached the schedule for next week's meeting. Let me know if Tuesday works for you.",
    ),
    "cnn_dailymail": dict(
        name="cnn_dailymail",
        citation="CNN/DailyMail 3.0.0, the non-anonymized version of See, Liu and Manning (ACL 2017) after Hermann et "
        "al., *Teaching Machines to Read and Comprehend* (NeurIPS 2015) (news article → its highlights).",
        licence="apache-2.0",
        rights=_APACHE + "the CNN/DailyMail corpus is distributed under Apache-2.0; the articles remain the "
        "publishers'.",
        limits="Trained on news articles; expect lower quality on other genres. Abstractive summaries can state "
        "facts the document does not support: check them against the source.",
        example="The city council approved the new budget on Tuesday after a long debate about school funding.",
    ),
    "xsum": dict(
        name="xsum",
        citation="XSum: Narayan, Cohen and Lapata, *Don't Give Me the Details, Just the Summary! Topic-Aware "
        "Convolutional Neural Networks for Extreme Summarization* (EMNLP 2018) (BBC article → one sentence).",
        licence="cc-by-sa-4.0",
        rights="The code of hf_vanilla is Apache-2.0, but these weights were trained on XSum, whose data card (GEM's) "
        "gives CC BY-SA 4.0 (attribution, share-alike) for articles that remain the BBC's: the model is released "
        "under CC BY-SA 4.0; check the BBC's terms before any commercial use.",
        limits="Trained on BBC news for one-sentence summaries, which often state facts the article does not "
        "support: check them against the source.",
        example="The city council approved the new budget on Tuesday after a long debate about school funding.",
    ),
    "samsum": dict(
        name="samsum",
        citation="SAMSum: Gliwa, Mochol, Biesek and Wawer, *SAMSum Corpus: A Human-annotated Dialogue Dataset for "
        "Abstractive Summarization* (Workshop on New Frontiers in Summarization, 2019) (chat dialogue → summary).",
        licence="cc-by-nc-nd-4.0",
        rights="The code of hf_vanilla is Apache-2.0, but these weights were trained on SAMSum, licensed CC BY-NC-ND "
        "4.0 (non-commercial use, attribution, no derivatives): the model is released under its terms, for "
        "non-commercial research only.",
        limits="Trained on short messenger conversations written by linguists; expect lower quality on real chats.",
        example="Anna: are we still on for lunch? Tom: yes, 12:30 at the usual place. Anna: great, see you there",
    ),
}


def summarization_corpus(dataset: str) -> dict:
    """What a card says of a summarization corpus (`SUMMARIZATION_CORPORA`): a Hub name or id, or AESLC's published
    folder (`enron_subject_line` or the `aeslc` folder holding it); any other corpus is named by its file and comes
    under its own terms."""
    name = next((name for name, hub in HUB_SUMMARIES.items() if hub.repo == dataset), dataset)
    if Path(dataset).name in ("enron_subject_line", "aeslc") and Path(dataset).is_dir():
        name = "aeslc"
    if name in SUMMARIZATION_CORPORA:
        return SUMMARIZATION_CORPORA[name]
    file = Path(dataset).name
    return dict(
        name=file,
        citation=f"the corpus `{file}` given to the recipe.",
        licence="apache-2.0",
        rights=_APACHE
        + f"the training data (`{file}`) come under their own terms, which may restrict the model's use.",
        limits="Trained on the corpus above alone; expect lower quality on other kinds of documents. Abstractive "
        "summaries can state facts the document does not support: check them against the source.",
        example="The city council approved the new budget on Tuesday after a long debate about school funding.",
    )


def _start_text(config: VanillaTransformerConfig) -> str:
    """How a new model of `config` was drawn (`init_scheme`) and which token its decoder starts from."""
    scheme = {
        "normal": 'projections N(0, {std}), biases zero (`init_scheme="normal"`)',
        "fairseq": "as fairseq's `transformer`: W^Q, W^K, W^V and W^O Xavier-uniform, `nn.Linear`'s default elsewhere "
        '(`init_scheme="fairseq"`)',
    }[config.init_scheme].format(std=config.init_std)
    names = {config.bos_token_id: "<s>", config.eos_token_id: "</s>", config.pad_token_id: "<pad>"}
    start = names.get(config.decoder_start_token_id, f"token {config.decoder_start_token_id}")
    return f"{scheme}; embeddings N(0, d_model^-0.5); the decoder starts from `{start}`"


# The tree a parser's card writes linearized as the model writes its trees (its leaves, its order).
EXAMPLE_TREE = "(S (NP (NNP John)) (VP (VBZ runs)))"


def _parsing_changes(results: dict, config: VanillaTransformerConfig, generation: GenerationConfig) -> list[str]:
    """What a parser's run changes from the paper's WSJ-only parser (section 6.3: 4 + 4 layers of width 1024, the
    paper's learning rate, XX leaves top-down as Vinyals et al., free beam-21 decoding with alpha 0.3 and + 300), a
    line each."""
    paper, training, changes = DECODING["parsing"], results["training_preset"], []
    shape = (config.encoder_layers, config.decoder_layers, config.d_model)
    if shape != (4, 4, 1024):
        changes.append(f"{shape[0]} + {shape[1]} layers of width {shape[2]} instead of 4 + 4 of width 1024")
    if config.tree_leaves != "placeholder":
        leaves = "each word copied" if config.tree_leaves == "words" else "each word's POS tag"
        changes.append(f"leaves written as {leaves} instead of the XX placeholder (`tree_leaves`)")
    if config.linearization != "top-down":
        changes.append(
            f"trees written {config.linearization} (Liu & Zhang, 2017) instead of top-down (`--linearization`)"
        )
    if training.get("lr_scale", 1.0) != 1.0:
        changes.append(f"{training['lr_scale']} times the paper's learning rate")
    if training.get("cooldown_steps"):
        steps = training["cooldown_steps"]
        changes.append(f"the learning rate taken linearly to zero over the last {steps} updates (`--cooldown-steps`)")
    if results.get("subtree_substitution"):
        changes.append(
            f"{results['subtree_substitution']} new training tree(s) per tree by subtree substitution "
            "(`--subtree-substitution`)"
        )
    if config.pointer_generator:
        changes.append("the pointer-generator's copy mechanism (`--pointer-generator`)")
    if results.get("tree_grammar"):
        changes.append("decoded under the tree grammar instead of freely (`--no-tree-grammar` decodes freely)")
    settings = [("num_beams", "beam")] + [("length_penalty", "length penalty alpha")] * (generation.num_beams > 1)
    for name, flag in settings:  # greedy decoding has no length penalty
        if getattr(generation, name) != paper[name]:
            value, option = getattr(generation, name), name.replace("_", "-")
            changes.append(f"{flag} {value} instead of {paper[name]} (`--{option}`)")
    return changes


def _best_text(results: dict) -> str:
    """The card's line on the best validation (`best/`): by which figure, its value, at which update."""
    metric = results.get("best_checkpoint_metric") or "loss"
    if metric == "loss":
        return (
            f"Best validation loss {results.get('best_valid_loss')} (label-smoothed, per target token) at update "
            f"{results.get('best_step')}"
        )
    items = results["training_preset"].get("eval_metric_sentences")
    return (
        f"Best validation {metric} {results.get('best_value')} (greedy decodings of {items} validation items) at "
        f"update {results.get('best_step')}"
    )


def _final_model_text(results: dict) -> str:
    """What the final (tested, published) model is: the best validation's checkpoint, or an average."""
    if results.get("final_model") == "best":
        metric = results.get("best_checkpoint_metric") or "loss"
        return f"the checkpoint of update {results.get('best_step')}, the best on validation by {metric}"
    names = results.get("averaged_checkpoints") or []
    return f"the average of {len(names)} checkpoint(s) ({', '.join(names)})"


def _copyable_text(copyable: dict, eval_split: str) -> str:
    """How much of the summaries the (truncated) documents hold, the ceiling of copying."""
    shown = [(split, copyable[split]) for split in ("train", "evaluation") if split in copyable]
    return "; ".join(
        f"{counts['summary_tokens_in_source']}% of the {eval_split if split == 'evaluation' else split} summaries' "
        f"tokens occur in their document as the model reads it (the first token of {counts['first_token_in_source']}% "
        "of the summaries)"
        for split, counts in shown
    )


def _translation_context(results: dict, config: VanillaTransformerConfig) -> dict:
    """The translation card's own fields: the paper's column, the limits, the data's terms, and the held-out word
    limit where the run filtered its held-out pairs by their words (the demo corpus, or when asked:
    `RunSettings.filters_held_out`)."""
    training = results["training_preset"]
    held_out = results["dataset"] == "bible" or training.get("skip_invalid_size_inputs_valid_test")
    return dict(
        paper=paper_translation(results, config),
        padding_percent=round(100 * results["padding_fraction"], 1),
        example="The book is on the table.",
        limits=_translation_limits(results),
        data_licence=_data_licence(results["dataset"]),
        held_out_words=training.get("max_source_words") if held_out else None,
        train_words=_training_words(training),
    )


def _filters_text(filters: dict) -> str:
    """What each split's filters kept and dropped (`training.data_filters`), in a sentence; "" for a run that
    recorded none."""
    parts = []
    for split, entry in filters.items():
        dropped = ", ".join(f"{count:,} {reason}" for reason, count in entry["dropped"].items())
        name = f"{entry['split']} scored" if split == "evaluation" else split
        counted = f"{entry['kept']:,} of {entry['pairs']:,} ({dropped})" if dropped else f"all {entry['pairs']:,}"
        parts.append(f"{name}: {counted}")
    return "; ".join(parts)


def _truncation_summary(truncated: dict, eval_split: str) -> str:
    names = {"evaluation": f"{eval_split} (evaluated)"}  # `training.run.train_and_evaluate`'s name for the held-out
    parts = [
        f"{names.get(split, split)}: {counts['sources_truncated']:,} of {counts['total']:,} documents and "
        f"{counts['targets_truncated']:,} summaries cut"
        for split, counts in truncated.items()
    ]
    return "; ".join(parts) or "nothing encoded by this run"
