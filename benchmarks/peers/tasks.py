"""The comparison's tasks (`TASKS`): how a task's splits are exported as the demo's pieces, how hypotheses are scored
with the project's own scorer (sacreBLEU; ROUGE against AESLC's @subject; the recipe's `delinearize` repair and EVALB
F1 against the gold trees), which recipe hf_vanilla runs and which of its results hold the quality; and each task's
`Variant`: a suffix of the system's name and the recipe's flags for it."""

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hf_vanilla.data.summaries import SIDES

from benchmarks.peers import parsing
from benchmarks.peers.common.pieces import Exported
from benchmarks.peers.summarization import (
    export_summarization,
    score_summary_file,
    summarization_task_settings,
    summary_results,
    summary_test_inputs,
)
from benchmarks.peers.translation import (
    LANGUAGES,
    export_translation,
    score_translation,
    translation_inputs,
    translation_results,
    translation_settings,
)

NO_COPY = "-no-copy"  # a system's variant without the copy mechanism (summarization)


NO_GRAMMAR = "-no-grammar"  # the recipe's variant without the tree grammar (parsing)


NORMAL_INIT = "-normal-init"  # the recipe's variant with N(0, 0.02) projections and <s> (translation)


@dataclass(frozen=True)
class Variant:
    """A task's systems with one of the recipe's features changed: the suffix of their names (`hf_vanilla-no-copy`),
    what it changes (for errors), the recipe's flags for it, and whether the peers have the variant too (False: the
    variant is the recipe's alone, e.g. without a feature that no peer has)."""

    suffix: str
    feature: str
    recipe_flags: tuple[str, ...]
    peers: bool = True


def no_keywords(settings: dict, tokenizer) -> dict:
    """No `generate_texts` keywords that need the model's tokenizer."""
    return {}


def nothing() -> None:
    """A task that needs nothing set up before its run."""


@dataclass(frozen=True)
class Task:
    """A task of the comparison. `settings(preset, base, overrides)`: the demo's settings a peer matches (`base`
    False: the task's `variant`'s); `export(settings, work, args)`: its splits written as the demo's own pieces, and
    the tokenizer; `score(hypotheses, exported folder)`: the record's `quality` and other figures by the project's
    own scorer; `recipe`: the script hf_vanilla runs; `from_results(results.json)`: the same figures from the
    recipe's results; `test_inputs(settings, test_limit)`: the test inputs the recipe decodes and `generate_texts`'
    keywords for them (`keywords(settings, tokenizer)`: those that need the model's tokenizer); `sides`: the exported
    files' suffixes; `variant`: the task's `Variant` (none: its systems have no other); `recipe_flags`: the recipe's
    flags as its docs launch it; `prepare()`: what the task sets up before a run (its data's environment)."""

    settings: Callable[[str, bool, dict], dict]
    export: Callable[[dict, Path, argparse.Namespace], tuple[Exported, object]]
    score: Callable[[list[str], Path], dict]
    recipe: str
    from_results: Callable[[dict], dict]
    test_inputs: Callable[[dict, int | None], tuple[list[str], dict]]
    sides: tuple[str, str]
    variant: Variant | None = None
    recipe_flags: tuple[str, ...] = ()
    keywords: Callable[[dict, object], dict] = no_keywords
    prepare: Callable[[], None] = nothing


TASKS = {
    "translation": Task(
        settings=translation_settings,
        export=export_translation,
        score=score_translation,
        recipe="recipes/wmt_ende.py",
        from_results=translation_results,
        test_inputs=translation_inputs,
        sides=LANGUAGES,
        variant=Variant(
            NORMAL_INIT,
            "variant with N(0, 0.02) projections and a <s> decoder start",
            ("--init-scheme", "normal", "--decoder-start", "bos"),
            peers=False,
        ),
    ),
    "summarization": Task(
        settings=summarization_task_settings,
        export=export_summarization,
        score=score_summary_file,
        recipe="recipes/summarize.py",
        from_results=summary_results,
        test_inputs=summary_test_inputs,
        sides=SIDES,
        variant=Variant(NO_COPY, "variant without a copy mechanism", ("--no-pointer-generator",)),
    ),
    "parsing": Task(
        settings=parsing.parsing_task_settings,
        export=parsing.export_parsing,
        score=parsing.score_parse_file,
        recipe="recipes/ptb_parse.py",
        from_results=parsing.parse_results,
        test_inputs=parsing.parse_test_inputs,
        sides=parsing.SIDES,
        variant=Variant(NO_GRAMMAR, "variant without the tree grammar", ("--no-tree-grammar",), peers=False),
        recipe_flags=("--treebank", "nltk"),
        keywords=parsing.parse_keywords,
        prepare=parsing.use_shared_nltk_data,
    ),
}


VARIANTS = {task.variant.suffix: task.variant for task in TASKS.values() if task.variant is not None}


def split_system(system: str) -> tuple[str, str]:
    """A system's name without its variant's suffix (one of `VARIANTS`), and that suffix ("" for none)."""
    for suffix in VARIANTS:
        if system.endswith(suffix):
            return system[: -len(suffix)], suffix
    return system, ""
