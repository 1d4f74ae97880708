"""What the decoder's generation cache (`VanillaDecodingCacheLayer`) saves: beam search with it beside beam search
with transformers' `DynamicCache` (which copies the whole self-attention cache into a new tensor at every step, and
again when the beams are reordered), in one process, with the same model and inputs; the outputs must be the same.

    python -m benchmarks.studies.decoding_cache                    # parsing-shaped: beam 21, 120 tokens
    python -m benchmarks.studies.decoding_cache --beams 4 --new-tokens 40 --sources 64 --source-tokens 30 \
        --model-size base
    python -m benchmarks.studies.decoding_cache --model runs/ptb_parse/final --sentences words.txt  # a trained parser

Without `--model`, an untrained `--model-size` model decodes `--sources` random sources of `--source-tokens` tokens,
exactly `--new-tokens` tokens each (min = max new tokens: an untrained model stops anywhere). With `--model` and
`--sentences` (one sentence a line), a trained model decodes them as the CLI does (`generate_texts`, a parser
`parse_texts` under its tree grammar), which is the demo's own work. Each repeat times both caches back to back, the
first alternating, so a machine's drift falls on both; figures are seconds, min / median / max over `--repeats`, and
the ratio of the medians.
"""

import argparse
import contextlib
import statistics
import time
import unittest.mock

import torch
from tqdm.auto import tqdm

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration, beam_search_vanilla
from hf_vanilla.batch_decoding import generate_texts, load_for_decoding, model_task, parse_texts
from hf_vanilla.errors import user_exit

from benchmarks.flag_checks import add_model_size, require_at_least

CACHES = ("VanillaDecodingCacheLayer", "DynamicCache")


def synthetic_decoder(args: argparse.Namespace):
    """A function decoding with one of CACHES: an untrained model on random sources, a fixed number of tokens."""
    torch.manual_seed(args.seed)
    config = VanillaTransformerConfig.from_size(args.model_size, vocab_size=args.vocab_size)
    model = VanillaTransformerForConditionalGeneration(config).eval()
    sources = torch.randint(4, args.vocab_size, (args.sources, args.source_tokens))

    def decode(cache: str) -> list:
        with torch.no_grad(), caching(model, cache):
            out = model.generate(
                sources, num_beams=args.beams, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens
            )
        return out.tolist()

    return decode


def trained_decoder(args: argparse.Namespace):
    """A function decoding `--sentences` with the trained `--model` as the CLI does, with one of CACHES."""
    model, tokenizer = load_for_decoding(args.model)
    with open(args.sentences, encoding="utf-8") as lines:
        sentences = [line.strip() for line in lines][: args.sources]
    # A parser decodes under its tree grammar, as `hf-vanilla parse` does.
    texts = parse_texts if model_task(model.config) == "parsing" else generate_texts

    def decode(cache: str) -> list:
        with caching(model, cache):
            return texts(model, tokenizer, sentences, progress=False)

    return decode


@contextlib.contextmanager
def caching(model, cache: str):
    """`generate` on `model` with one of CACHES: ours (beam search's `VanillaDecodingCacheLayer`s) or transformers'
    `DynamicCache` as transformers makes it (the beam search leaves its layers as they are)."""
    if cache != "DynamicCache":
        yield
        return
    with unittest.mock.patch.object(beam_search_vanilla, "use_decoding_cache_layers", lambda cache, length: None):
        yield


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_size(parser, "--model-preset", "demo", ["tiny", "demo", "base"])
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--beams", type=int, default=21, help="Beam size (parsing: 21).")
    parser.add_argument("--sources", type=int, default=30, help="Sources decoded in one batch (a file's first N).")
    parser.add_argument("--source-tokens", type=int, default=40)
    parser.add_argument("--new-tokens", type=int, default=120, help="Tokens generated per source.")
    parser.add_argument("--model", help="A trained model's folder: decode --sentences with it instead.")
    parser.add_argument("--sentences", help="With --model: a text file, one sentence a line.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"beams": 1, "sources": 1, "source_tokens": 1, "new_tokens": 1, "repeats": 1})
    if (args.model is None) != (args.sentences is None):
        parser.error("--model and --sentences go together")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    decode = trained_decoder(args) if args.model else synthetic_decoder(args)
    outputs = {cache: decode(cache) for cache in CACHES}  # warm-up, and the check that both decode the same
    if outputs[CACHES[0]] != outputs[CACHES[1]]:
        raise user_exit("decoding_cache", "the two caches decoded different outputs")
    seconds: dict[str, list[float]] = {cache: [] for cache in CACHES}
    for repeat in tqdm(range(args.repeats), desc="paired repeats"):
        for cache in CACHES if repeat % 2 == 0 else CACHES[::-1]:
            start = time.perf_counter()
            decode(cache)
            seconds[cache].append(time.perf_counter() - start)
    what = f"{args.model} on {args.sentences}" if args.model else f"untrained {args.model_size}"
    print(f"\n{what}; {torch.get_num_threads()} threads; {args.repeats} paired repeats; seconds (min / median / max)")
    print(f"| {' | '.join(CACHES)} | ratio of medians |")
    print("|---|---|---|")
    medians = [statistics.median(seconds[cache]) for cache in CACHES]
    cells = " | ".join(f"{min(s):.2f} / {statistics.median(s):.2f} / {max(s):.2f}" for s in seconds.values())
    print(f"| {cells} | {medians[0] / medians[1]:.3f} |")


if __name__ == "__main__":
    main()
