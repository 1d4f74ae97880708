"""English constituency parsing as translation (section 6.3 of the paper), under Accelerate.

    NLTK_DATA=../shared/data/nltk_data accelerate launch recipes/ptb_parse.py --preset demo --treebank nltk
    accelerate launch recipes/ptb_parse.py --preset parsing --treebank /data/ptb/parsed/mrg/wsj

Trees -> (words, linearized tree) pairs -> the same tokenizer, batching, loop, checkpoints and averaging as the
translation recipe -> beam 21, alpha 0.3, max input + 300, under the tree grammar (or freely: --no-tree-grammar) ->
`delinearize` repair -> EVALB -> results.json.
"""

from dataclasses import dataclass, field
from pathlib import Path

from accelerate.utils import set_seed
from datasets import Dataset, DatasetDict
from transformers import HfArgumentParser

from hf_vanilla.configuration_vanilla import VanillaTransformerConfig
from hf_vanilla.data.encoding import encode_pairs
from hf_vanilla.data.treebank import treebank_path, treebank_splits
from hf_vanilla.decoding import generate_texts
from hf_vanilla.evaluation.evalb import evalb
from hf_vanilla.parsing import linearize_leaves, needed_repair, tree_from_output, tree_words
from hf_vanilla.parsing.grammar import tree_grammar_for
from hf_vanilla.tokenization import prepare_shared_tokenizer
from hf_vanilla.training.accelerator import create_accelerator
from hf_vanilla.training.finish import finish_run
from hf_vanilla.training.loop import settings_for_run, train
from hf_vanilla.training.presets import PARSING_PRESETS, new_model


@dataclass
class Arguments:
    preset: str = field(default="demo", metadata={"help": "parsing (the paper) or demo (NLTK sample, 2 CPU cores)."})
    treebank: str = field(
        default="nltk",
        metadata={"help": "nltk (NLTK's WSJ sample on NLTK's data path) or the folder of LDC's parsed/mrg/wsj."},
    )
    output_dir: str = field(default="runs/ptb_parse")
    max_steps: int | None = field(default=None)
    max_tokens: int | None = field(default=None)
    update_freq: int = field(default=1)
    resume: bool = field(default=False)
    push_to_hub: str | None = field(default=None)
    seed: int = field(default=1)
    num_beams: int | None = field(default=None, metadata={"help": "Override the paper's beam of 21 (e.g. on CPU)."})
    dropout: float | None = field(
        default=None,
        metadata={"help": "Residual and embedding dropout (default: the preset's). The paper chose its dropouts on the "
                  "development set: compare runs with --eval-split validation."},
    )
    attention_dropout: float | None = field(default=None, metadata={"help": "Dropout on attention weights (default 0)."})
    tree_leaves: str | None = field(
        default=None,
        metadata={"help": "What stands for each word in the output trees: placeholder (XX, the paper's setup), pos "
                  "(its tag) or words (copied); default: the preset's (demo: words). EVALB ignores tags either way."},
    )
    tree_grammar: bool = field(
        default=True,
        metadata={"help": "Decode under the grammar of trees over the input words (hf_vanilla.parsing.grammar): every "
                  "hypothesis a well-formed tree prefix. --no-tree-grammar decodes freely as the paper did; either way "
                  "`delinearize` repairs what comes out."},
    )
    max_train_minutes: float | None = field(default=None)
    eval_split: str = field(default="test")
    eval_sentences: int | None = field(default=None, metadata={"help": "Parse only the first N held-out sentences."})
    mixed_precision: str = field(default="no")
    report_to: str | None = field(default=None, metadata={"help": "An Accelerate tracker, e.g. tensorboard."})
    log_every: int = field(default=50)
    save_every: int | None = field(default=None)
    keep_last: int | None = field(default=None)
    average_last: int | None = field(default=None)


def as_pairs(trees: list[str], leaves: str) -> Dataset:
    pairs = [{"words": " ".join(tree_words(t)), "tree": linearize_leaves(t, leaves)} for t in trees]
    return Dataset.from_dict({"translation": pairs, "gold": trees})


def main(args: Arguments) -> dict:
    if args.preset not in PARSING_PRESETS:
        raise SystemExit(f"--preset must be one of {sorted(PARSING_PRESETS)}, got {args.preset!r}")
    preset = PARSING_PRESETS[args.preset]
    output_dir = Path(args.output_dir)
    accelerator = create_accelerator("ptb_parse", output_dir, args.mixed_precision, args.report_to, vars(args))
    set_seed(args.seed)
    output_dir.mkdir(parents=True, exist_ok=True)
    # The preset's leaves, or --tree-leaves checked by the configuration before any data is prepared.
    try:
        leaves = VanillaTransformerConfig.from_preset(
            preset.model_preset, **({"tree_leaves": args.tree_leaves} if args.tree_leaves else {})
        ).tree_leaves
    except ValueError as error:
        raise SystemExit(f"--tree-leaves: {error}") from error
    try:
        splits = treebank_splits(treebank_path(args.treebank))
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from error
    corpus = DatasetDict({split: as_pairs(trees, leaves) for split, trees in splits.items()})
    # Treebank words are tokenized already; whole-piece BPE keeps every bracket symbol one token.
    tokenizer = prepare_shared_tokenizer(
        accelerator, output_dir, corpus["train"], ("words", "tree"), preset.vocab_size, whitespace_only=True
    )
    examples = encode_pairs(corpus["train"], tokenizer, "words", "tree")
    dropouts = {"dropout": args.dropout, "attention_dropout": args.attention_dropout}
    overrides = {k: v for k, v in dropouts.items() if v is not None}
    model = new_model(preset.model_preset, tokenizer, tree_leaves=leaves, **overrides)
    settings = settings_for_run(preset, args, accelerator.num_processes, examples)
    stats = train(accelerator, model, tokenizer, examples, settings, output_dir, resume=args.resume)

    def evaluate(final_model) -> dict:
        held_out = corpus[args.eval_split]
        if args.eval_sentences:
            held_out = held_out.select(range(min(args.eval_sentences, len(held_out))))
        sentences = [pair["words"] for pair in held_out["translation"]]
        generate_kwargs = {"num_beams": args.num_beams} if args.num_beams else {}
        if args.tree_grammar:
            generate_kwargs["processors_for_batch"] = tree_grammar_for(tokenizer, leaves)
        outputs = generate_texts(final_model, tokenizer, sentences, **generate_kwargs)
        predictions, repaired = [], 0
        for sentence, output in zip(sentences, outputs):
            words = sentence.split()
            repaired += needed_repair(output, words, leaves)
            predictions.append(tree_from_output(output, words, leaves))
        (output_dir / "predictions.mrg").write_text("\n".join(predictions) + "\n")
        scores = evalb(held_out["gold"], predictions)
        return {
            **{f"evalb_{k}": v for k, v in scores.items()},
            "repaired_share": round(repaired / len(sentences), 4),
            "eval_split": args.eval_split,
            "samples": [
                {"source": s, "reference": g, "hypothesis": p} for s, g, p in zip(sentences, held_out["gold"], predictions)
            ],
        }

    extra = {"treebank": args.treebank, "task": "parsing", "tree_leaves": leaves, "tree_grammar": args.tree_grammar}
    results = finish_run(accelerator, output_dir, stats, preset, args, evaluate, extra=extra)
    accelerator.end_training()
    return results


if __name__ == "__main__":
    (arguments,) = HfArgumentParser(Arguments).parse_args_into_dataclasses()
    main(arguments)
