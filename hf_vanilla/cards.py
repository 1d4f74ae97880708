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
}


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
    if _check_results(results) == "translation":
        return {"sacrebleu": results["sacrebleu"], "bleu": results["tokenized_bleu"]}
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
        license="apache-2.0",
        library_name="transformers",
        pipeline_tag="translation" if task == "translation" else "text2text-generation",
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
    optional = {"eval_only": False, "init_from": None, "best_step": None, "best_valid_loss": None}
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
    }
    if task == "translation":
        context.update(
            paper=paper_translation(results, config),
            padding_percent=round(100 * results["padding_fraction"], 1),
            example="The book is on the table.",
            limits=_translation_limits(results),
            data_licence=_data_licence(results["dataset"]),
        )
    else:
        full_wsj = Path(results["treebank"]).name != "nltk"
        context.update(
            full_wsj=full_wsj,
            split_rule="sections 02-21 train, 22 development, 23 test"
            if full_wsj
            else "NLTK's 10% sample: files 0001-0159 train, 0160-0179 development, 0180-0199 test",
            repaired_percent=round(100 * results["repaired_share"], 1),
            tree_grammar=results.get("tree_grammar", False),  # runs before the grammar existed decoded freely
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
    "killed and resumed included; on another processor float32 sums run in another order, the small differences grow "
    "over training, and the figures move (hf_vanilla's CPU demos: by up to about a point between two 2-core machines)."
)


def _translation_limits(results: dict) -> str:
    if results["dataset"] == "bible":
        preset = results["training_preset"]
        words = preset.get("max_train_source_words") or preset.get("max_source_words")
        return (
            "A demonstration model: trained for minutes on a CPU on Bible verses of at most "
            f"{words} words (World English Bible → Elberfelder 1932). "
            "It translates biblical English in that style and little else."
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
