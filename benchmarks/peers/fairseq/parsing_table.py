"""fairseq 0.12's side of the parsing demo's settings table (`fairseq_parse_rows`), each row beside the recipe's value
(`parsing.parsing_settings`, under its tree grammar or with `--no-tree-grammar`), and fairseq's flags derived from
them: fairseq's plain `transformer` trained on the recipe's linearized trees, decoding freely."""

from benchmarks.peers.common.settings import Row, hf_decoding_batches
from benchmarks.peers.fairseq.translation_table import (
    fairseq_decoding_batches,
    fairseq_train_flags,
    model_rows,
    training_rows,
)

FAIRSEQ_MAX_POSITIONS = 1024  # the `transformer` arch's default --max-source/target-positions


def fairseq_parse_rows(s: dict) -> list[Row]:
    """The side-by-side table of fairseq 0.12 (`transformer`, `label_smoothed_cross_entropy`, `adam`,
    `inverse_sqrt`) against the parsing settings `s` (`parsing.parsing_settings`): the model's rows (the vocabulary's:
    the recipe's whole-piece BPE), the trees', training's, then decoding's."""
    model = [_vocabulary_row(s) if row.setting == "vocabulary" else row for row in model_rows(s)]
    return [*model, *_tree_rows(s), *training_rows(s), *_parse_decoding_rows(s)]


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
            f"words -> linearized tree with tree_leaves={s['tree_leaves']}, linearization "
            f"{s.get('linearization', 'top-down')} (`as_pairs`: `(S (NP The cat )NP ...` top-down)",
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
