"""The parsing demo's settings (`recipes/ptb_parse.py --preset demo --treebank nltk`, under its tree grammar or
with `--no-tree-grammar`), each beside fairseq's flag that gives it (or the reason none can), and fairseq's flags
derived from them: fairseq's plain `transformer` trained on the recipe's linearized trees, decoding freely."""

import importlib
import sys
from pathlib import Path

from hf_vanilla.configuration_vanilla import VanillaGenerationConfig
from hf_vanilla.training.arguments import resolve
from hf_vanilla.training.model_building import run_config
from hf_vanilla.training.presets import PARSING_PRESETS

from settings_table import (
    DECODING_BATCHES,
    OVERRIDABLE,
    Row,
    _model_rows,
    _training_rows,
    fairseq_decoding_batches,
    fairseq_train_flags,
    hf_decoding_batches,
    resolved_training,
)

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
FAIRSEQ_MAX_POSITIONS = 1024  # the `transformer` arch's default --max-source/target-positions


def parse_recipe():
    """`recipes/ptb_parse.py` as a module: its `Arguments` resolve the preset as a run does, its `as_pairs` pairs the
    trees as the run pairs them."""
    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))
    return importlib.import_module("ptb_parse")


def parsing_settings(preset: str = "demo", grammar: bool = True, **overrides) -> dict:
    """Every setting of the parsing recipe's `preset` that a peer has to match, as the recipe resolves it (its
    `Arguments` over `PARSING_PRESETS` by `resolve`; `grammar` False: `--no-tree-grammar`), the model's (`run_config`:
    its `tree_leaves`) and the decoding's (the model's generation config with the preset's decoding values over it,
    as `build_model` sets it), with `overrides` (names of `OVERRIDABLE`)."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {sorted(unknown)}")
    given = {name: value for name, value in overrides.items() if value is not None}
    run = resolve(parse_recipe().Arguments(preset=preset, tree_grammar=grammar, **given), PARSING_PRESETS)
    model = run_config(run, "parsing")
    decoding = VanillaGenerationConfig.from_model_config(model)
    decoding.update(**run.decoding)
    names = ("encoder_layers", "decoder_layers", "d_model", "num_attention_heads", "d_ff", "dropout")
    names += ("attention_dropout", "activation_dropout", "label_smoothing", "tie_word_embeddings", "scale_embedding")
    names += ("tree_leaves",)
    return {
        "task": "parsing",
        "preset": preset,
        "activation": model.activation_function,
        **{name: getattr(model, name) for name in names},
        "treebank": run.treebank,
        "tree_grammar": bool(run.tree_grammar),
        **resolved_training(run, model),
        "final_model": run.final_model,
        "max_length": run.max_length,
        "max_length_ratio": run.max_length_ratio,
        **{name: getattr(decoding, name) for name in DECODING_NAMES},
        **DECODING_BATCHES,
    }


DECODING_NAMES = ("num_beams", "length_penalty", "length_penalty_style", "max_length_offset")


def fairseq_parse_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer`, `label_smoothed_cross_entropy`, `adam`,
    `inverse_sqrt`) against the parsing settings `s` (`parsing_settings`): the model's rows (the vocabulary's: the
    recipe's whole-piece BPE), the trees', training's, then decoding's."""
    model = [_vocabulary_row(s) if row.setting == "vocabulary" else row for row in _model_rows(s)]
    return [*model, *_tree_rows(s), *_training_rows(s), *_parse_decoding_rows(s)]


def _vocabulary_row(s: dict) -> Row:
    return Row(
        "vocabulary",
        f"shared BPE of whole whitespace-separated pieces (treebank words, `(NP`, `)NP`), {s['vocab_size']} pieces",
        f"the same pieces (dict.txt of the {s['vocab_size'] - 4} non-special pieces + fairseq's 4 specials)",
    )


def _tree_rows(s: dict) -> list[Row]:
    """What the model reads and writes, and what the grammar adds in decoding."""
    grammar = (
        "the tree grammar: every hypothesis a well-formed tree prefix over the input words"
        if s["tree_grammar"]
        else "none (--no-tree-grammar: decodes freely, as the paper did)"
    )
    return [
        Row(
            "pairs",
            f"words -> linearized tree with tree_leaves={s['tree_leaves']} (`as_pairs`: `(S (NP The cat )NP ...`)",
            "the exported pairs, the recipe's own",
        ),
        Row(
            "tree grammar",
            grammar,
            "none: fairseq-generate decodes freely",
            "fairseq has no constrained decoding; the -no-grammar row measures the recipe without it"
            if s["tree_grammar"]
            else "",
            matched=not s["tree_grammar"],
        ),
        Row(
            "repair and scoring",
            "`delinearize` (`tree_from_output`) into a tree over the input words, then EVALB F1 (in-process, "
            "COLLINS.prm rules) against the gold test trees",
            "the same repair and EVALB on fairseq's pieces decoded by the demo's tokenizer",
        ),
    ]


def _parse_decoding_rows(s: dict) -> list[Row]:
    """The beam search, its length rules and batches, and the pairs each split keeps."""
    alpha, offset = s["length_penalty"], s["max_length_offset"]
    return [
        Row("beam", str(s["num_beams"]), f"--beam {s['num_beams']}"),
        Row(
            "length penalty",
            f"GNMT: log P / ((5 + len(Y)) / 6)^{alpha}",
            f"--lenpen {alpha}: length normalization, log P / len(Y)^{alpha}",
            "fairseq-generate has no GNMT penalty; the same alpha under its formula",
            matched=False,
        ),
        Row(
            "maximum output",
            f"source tokens (with </s>) + {offset}, </s> included",
            f"--max-len-a 1 --max-len-b {offset - 1}",
            f"fairseq's limit a * source + b leaves out the </s> it adds: b is one less; it also caps at its "
            f"{FAIRSEQ_MAX_POSITIONS - 1} positions (sinusoidal here: no cap)",
        ),
        Row(
            "decoding batches",
            hf_decoding_batches(s),
            " ".join(fairseq_decoding_batches(s)),
            "fairseq counts max(source, reference) tokens",
        ),
        Row("training pairs", "every tree of the split (no length or ratio filter)", "the exported split"),
        Row("held-out pairs", "every tree of the split", "the exported splits"),
    ]


def fairseq_parse_train_flags(s: dict, seed: int) -> list[str]:
    """`fairseq-train`'s flags for the parsing settings `s`: translation's (`fairseq_train_flags`: `transformer`)."""
    return fairseq_train_flags(s, seed)


def fairseq_parse_generate_flags(s: dict) -> list[str]:
    """`fairseq-generate`'s decoding flags for the parsing settings `s`."""
    return [
        *("--beam", str(s["num_beams"]), "--lenpen", str(s["length_penalty"])),
        *("--max-len-a", "1", "--max-len-b", str(s["max_length_offset"] - 1)),
        *fairseq_decoding_batches(s),
    ]
