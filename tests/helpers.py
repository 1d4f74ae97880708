"""What several test files share: the shared data's location, tiny models, random batches, and a tiny model trained
for a few seconds to reverse its input, whose decodings depend on the source token by token.

An untrained model writes one token at every step of every beam, so a test comparing two of its decodings passes
whatever the cache, the masks or the beam reordering do. Decoding tests compare decodings of `reversal_model()`
instead, and check that they are the task's answers (`reversal_batch`), which no broken cache or mask gives."""

import importlib
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import hf_vanilla

SHARED_DATA = Path(os.environ.get("HF_VANILLA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
WMT_SAMPLE = SHARED_DATA / "wmt14-ende-sample"
NLTK_DATA = SHARED_DATA / "nltk_data"
RECIPES = Path(__file__).resolve().parents[1] / "recipes"


def require(path: Path) -> Path:
    """Skips the calling test when the shared data at `path` is absent (a user's fresh clone)."""
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (set HF_VANILLA_SHARED_DATA to ../shared/data)")
    return path


def recipe(name: str):
    """A recipe script (`recipes/NAME.py`) as a module."""
    if str(RECIPES) not in sys.path:
        sys.path.insert(0, str(RECIPES))
    return importlib.import_module(name)


def run_settings(**overrides):
    """Settings for loop tests: the tiny preset's, with small batches, frequent logs, checkpoints every 2 updates and
    validation off, unless `overrides` say otherwise."""
    from hf_vanilla.training.arguments import RunSettings, resolve
    from hf_vanilla.training.presets import WMT_PRESETS

    defaults = dict(preset="tiny", max_steps=6, max_tokens=64, update_freq=2, warmup_steps=4, seed=0, log_every=1)
    defaults.update(save_every=2, keep_last=3, average_last=3, eval_every=0)
    return resolve(RunSettings(**{**defaults, **overrides}), WMT_PRESETS)


def wmt_args(output_dir: Path, **overrides):
    """Arguments of a short WMT-sample run of the translation recipe."""
    defaults = dict(
        preset="demo",
        dataset=str(require(WMT_SAMPLE)),
        moses_detokenize=True,
        output_dir=str(output_dir),
        max_steps=2,
        max_tokens=1500,
        eval_split="validation",
        eval_sentences=2,
        save_every=2,
        log_every=1,
        eval_every=0,
        num_beams=1,
    )
    return recipe("wmt_ende").Arguments(**{**defaults, **overrides})


def tiny_recipe_flags(output_dir: Path, *flags: str) -> list[str]:
    """The translation recipe's flags for the tiny preset on the shared WMT sample, writing into `output_dir`."""
    return [
        *("--preset", "tiny", "--dataset", str(require(WMT_SAMPLE)), "--moses-detokenize"),
        *("--eval-split", "validation", "--output-dir", str(output_dir)),
        *flags,
    ]


def tiny_recipe(output_dir: Path, *flags: str) -> subprocess.Popen:
    """The translation recipe run directly (one process, one thread) with the tiny preset on the shared WMT sample,
    writing into `output_dir`, its stderr in `output_dir`.log."""
    command = [sys.executable, str(RECIPES / "wmt_ende.py"), *tiny_recipe_flags(output_dir, *flags)]
    with output_dir.with_suffix(".log").open("w") as log:
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )


def tiny_examples():
    """120 random pairs (3-11 ids + </s>), each target its source reversed."""
    from hf_vanilla.data.encoding import EncodedPairs

    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, 12, (120,), generator=g).tolist()
    ids = [torch.randint(4, 1000, (n,), generator=g).tolist() + [2] for n in lengths]
    return EncodedPairs.from_lists(ids, [list(reversed(x[:-1])) + [2] for x in ids])


def run_loop(
    output_dir: Path,
    max_steps: int | None,
    resume: bool = False,
    dynamo_backend: str | None = None,
    model_overrides: dict | None = None,
    **settings,
):
    """The training loop on `tiny_examples` (checkpoints every 2 updates unless `settings` say otherwise), the model
    compiled with `dynamo_backend` when given: (TrainingResult, trained model)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from accelerate.utils import set_seed

    from hf_vanilla.training.context import RunContext
    from hf_vanilla.training.loop import train

    set_seed(0)
    AcceleratorState._reset_state()  # the state is a per-process singleton: each run gets its own dynamo backend
    accelerator = Accelerator(cpu=True, dynamo_backend=dynamo_backend)
    model = tiny_model(**(model_overrides or {})).train()
    settings = run_settings(max_steps=max_steps, resume=resume, **settings)
    result = train(RunContext("test", settings, accelerator, Path(output_dir), model=model), tiny_examples())
    return result, model


def tiny_model(**overrides) -> hf_vanilla.VanillaTransformerForConditionalGeneration:
    """The `tiny` preset, untrained, seeded, in eval mode."""
    torch.manual_seed(0)
    config = hf_vanilla.VanillaTransformerConfig.from_preset("tiny", **overrides)
    return hf_vanilla.VanillaTransformerForConditionalGeneration(config).eval()


def batch(seed: int = 1, lengths=(7, 4, 6), vocab: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded batch of random source sentences, each ending with </s> (id 2)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=generator)
        ids[row, length - 1] = 2
    return ids, (ids != 0).long()


# --- float tolerances ------------------------------------------------------------------------------------------------


def rounding_tolerance(scale: float, *, depth: int, width: int, dtype: torch.dtype = torch.float32) -> float:
    """How far apart two computations of the same values can be when they differ only in rounding (summation order,
    kernels, thread count, another CPU): 8 * u * sqrt(2 * depth * width) * scale, an absolute tolerance.

    u is `dtype`'s unit roundoff (2^-24 for float32, 2^-53 for float64). A value computed through `depth` sums in
    sequence, each of at most `width` terms, depends on about depth * width roundings, each off by at most u relative
    to the values' magnitude, `scale`; layer norms and weights of norm about 1 pass errors on without growing them.
    Independent mean-zero roundings add up like a random walk: the two computations' difference, a sum of
    2 * depth * width of them, stays within lambda * sqrt(2 * depth * width) * u * scale with probability at least
    1 - 2 exp(-lambda^2 / 2) (Higham and Mary, "A new approach to probabilistic rounding error analysis", SIAM J. Sci.
    Comput. 41, 2019); lambda = 8 makes that 3e-14 per compared value. (The worst case, every rounding the same way,
    grows with depth * width instead.) `scale` is the largest magnitude among the values
    summed, not each compared element's own: a small element is a cancellation of terms as large as the largest."""
    return 8 * (torch.finfo(dtype).eps / 2) * math.sqrt(2 * depth * width) * scale


def transformer_sums(config) -> dict[str, int]:
    """`depth` and `width` (see `rounding_tolerance`) of an encoder-decoder's logits: sums in sequence, 5 per attention
    (projection, scores, softmax normalisation, weighted values, output projection), 2 per feed-forward, 1 per layer
    norm, 1 for the output projection; the longest sum is over the feed-forward's width or the model's."""
    d_ff = getattr(config, "d_ff", None) or config.encoder_ffn_dim
    depth = config.encoder_layers * (5 + 2 + 2) + config.decoder_layers * (5 + 5 + 2 + 3) + 1
    return dict(depth=depth, width=max(config.d_model, d_ff))


def assert_close_up_to_rounding(
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    depth: int,
    width: int,
    scale: float | None = None,
    dtype: torch.dtype | None = None,
    msg: str | None = None,
) -> None:
    """`actual` equals `expected` within `rounding_tolerance`, against the largest finite magnitude of `expected`
    unless `scale` is given, in the precision of the less precise of the two unless `dtype` is (pass it where a cast
    hides the precision computed in). Infinities must match exactly."""
    if scale is None:
        finite = expected.detach()[torch.isfinite(expected.detach())]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
    if dtype is None:
        dtype = max(actual.dtype, expected.dtype, key=lambda d: torch.finfo(d).eps)
    atol = rounding_tolerance(scale, depth=depth, width=width, dtype=dtype)
    torch.testing.assert_close(actual, expected, atol=atol, rtol=0, msg=msg)


# --- the reversal model ---------------------------------------------------------------------------------------------

REVERSAL_SYMBOLS = range(4, 28)  # ids 0-3 are <pad>, <s>, </s>, <unk>
REVERSAL_VOCAB = 32


def reversal_batch(
    seed: int, rows: int, lengths: tuple[int, int] = (3, 10)
) -> tuple[torch.Tensor, torch.Tensor, list]:
    """`rows` random sequences of REVERSAL_SYMBOLS (lengths drawn from `lengths`, inclusive) + </s>, right-padded:
    (input_ids, attention_mask, answers), each answer the reversed sequence followed by </s>."""
    generator = torch.Generator().manual_seed(seed)
    sizes = torch.randint(lengths[0], lengths[1] + 1, (rows,), generator=generator).tolist()
    ids = torch.zeros(rows, max(sizes) + 1, dtype=torch.long)
    answers = []
    for row, size in enumerate(sizes):
        symbols = torch.randint(REVERSAL_SYMBOLS.start, REVERSAL_SYMBOLS.stop, (size,), generator=generator)
        ids[row, :size], ids[row, size] = symbols, 2
        answers.append(symbols.flip(0).tolist() + [2])
    return ids, (ids != 0).long(), answers


def reversal_accuracy(model, ids: torch.Tensor, mask: torch.Tensor, answers: list, **generate_kwargs) -> float:
    """Share of rows whose decoding (after the start token, up to </s>) is exactly the answer."""
    out = model.generate(ids, attention_mask=mask, max_new_tokens=ids.shape[1] + 2, **generate_kwargs)
    return sum(decoded(row) == answer for row, answer in zip(out.tolist(), answers)) / len(answers)


def decoded(row: list[int]) -> list[int]:
    """A generated row's tokens after the start token, up to and including the first </s>."""
    tokens = row[1:]
    return tokens[: tokens.index(2) + 1] if 2 in tokens else tokens


def train_reversal_model(
    max_steps: int = 1500, target: float = 0.95, seed: int = 0, **config_overrides
) -> hf_vanilla.VanillaTransformerForConditionalGeneration:
    """The tiny preset (32-token vocabulary, no dropout, no smoothing, any other `config_overrides`) trained to
    reverse sequences of 3-10 symbols until greedy decoding gets `target` of 200 held-out sequences exactly right
    (about 15 s on 2 CPU cores). Fails the calling test if it does not get there: a model that cannot learn a reversal
    is itself a defect."""
    torch.manual_seed(seed)
    config = hf_vanilla.VanillaTransformerConfig.from_preset(
        "tiny", vocab_size=REVERSAL_VOCAB, dropout=0.0, label_smoothing=0.0, **config_overrides
    )
    model = hf_vanilla.VanillaTransformerForConditionalGeneration(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    warmup = 100
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    held_out = reversal_batch(seed=10_000, rows=200)
    started, accuracy = time.perf_counter(), 0.0
    for step in range(1, max_steps + 1):
        ids, mask, answers = reversal_batch(seed=seed * 100_000 + step, rows=64)
        labels = torch.full_like(ids, -100)
        for row, answer in enumerate(answers):
            labels[row, : len(answer)] = torch.tensor(answer)
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 300 and step % 100 == 0:
            with torch.no_grad():
                # Without the cache, so that a broken cache fails the tests that check it rather than this fixture.
                accuracy = reversal_accuracy(model.eval(), *held_out, num_beams=1, use_cache=False)
            model.train()
            if accuracy >= target:
                break
    if accuracy < target:
        pytest.fail(
            f"the reversal model reached {accuracy:.2f} after {step} updates ({time.perf_counter() - started:.0f} s), "
            f"not {target}: training or greedy decoding is broken"
        )
    return model.eval()


def reversal_tokenizer():
    """A word-level tokenizer for the reversal model's 32 ids: <pad> <s> </s> <unk>, then one letter per symbol
    (a-x for REVERSAL_SYMBOLS, y z A B for the unused ids); it appends </s> as hf_vanilla's tokenizers do."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    letters = "abcdefghijklmnopqrstuvwxyzAB"
    vocab = {token: index for index, token in enumerate(["<pad>", "<s>", "</s>", "<unk>", *letters])}
    assert len(vocab) == REVERSAL_VOCAB
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def reversal_text(ids: torch.Tensor) -> list[str]:
    """The source sentences of a `reversal_batch` as text for `reversal_tokenizer` (</s> and padding left out)."""
    letters = "abcdefghijklmnopqrstuvwxyzAB"
    return [" ".join(letters[i - 4] for i in row if i > 3) for row in ids.tolist()]


# --- an OPUS-MT checkout ------------------------------------------------------------------------------------------


def write_opus_tokenizer(folder: Path, sentences: int = 2000, pieces: int = 300) -> int:
    """Writes the tokenizer files of an OPUS-MT checkout into `folder`: SentencePiece models trained on the shared
    WMT sample (source.spm on English, target.spm on German, `pieces` each) and one vocab.json over both, with
    </s> = 0, <unk> = 1 and <pad> last, as OPUS-MT's Marian vocabularies are; returns the vocabulary size."""
    import io

    import sentencepiece

    require(WMT_SAMPLE)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"</s>": 0, "<unk>": 1}
    for lang, name in (("en", "source.spm"), ("de", "target.spm")):
        lines = (WMT_SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:sentences]
        buffer = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=buffer,
            vocab_size=pieces,
            model_type="unigram",
            character_coverage=1.0,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
            minloglevel=2,
        )
        (folder / name).write_bytes(buffer.getvalue())
        processor = sentencepiece.SentencePieceProcessor(model_proto=buffer.getvalue())
        for index in range(processor.get_piece_size()):
            if not (processor.is_unknown(index) or processor.is_control(index)):
                vocab.setdefault(processor.id_to_piece(index), len(vocab))
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "de"}))
    return len(vocab)


def random_marian(vocab_size: int, seed: int = 0, bias: bool = True, **overrides):
    """An untrained `MarianMTModel` set up as OPUS-MT's are (</s> = 0, <pad> last and the decoder's start token, pad
    never generated, swish, scaled embeddings), with projections of std 0.1 (so that its outputs depend on its input),
    a random `final_logits_bias` (unless `bias=False`) and a non-zero <pad> embedding (the start token's)."""
    from transformers import MarianConfig, MarianMTModel

    pad = vocab_size - 1
    settings = dict(
        vocab_size=vocab_size,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        max_position_embeddings=256,
        init_std=0.1,
        dropout=0.1,
    )
    torch.manual_seed(seed)
    marian = MarianMTModel(MarianConfig(**{**settings, **overrides})).eval()
    with torch.no_grad():
        if bias:
            marian.final_logits_bias.normal_(0.0, 0.5)
        marian.model.shared.weight[marian.config.pad_token_id].normal_(0.0, 0.3)
    marian.generation_config.update(
        bad_words_ids=[[marian.config.pad_token_id]], renormalize_logits=True, num_beams=4, max_length=64
    )
    return marian


def assert_cache_changes_nothing(model, num_beams: int, sums: dict[str, int]) -> None:
    """Decoding the reversal batch with the key/value cache (one new position a step, reordered with the beams) gives
    the tokens of recomputing the whole prefix at each step, and every step's scores within `rounding_tolerance` of
    `sums` (the model's depth and width)."""
    ids, mask, _ = reversal_batch(seed=3, rows=6)
    kwargs = dict(
        attention_mask=mask,
        num_beams=num_beams,
        num_return_sequences=num_beams,
        max_new_tokens=12,
        output_scores=True,
        return_dict_in_generate=True,
    )
    with_cache = model.generate(ids, use_cache=True, **kwargs)
    without = model.generate(ids, use_cache=False, **kwargs)
    assert_varied(with_cache.sequences[::num_beams])
    assert torch.equal(with_cache.sequences, without.sequences)
    for cached, recomputed in zip(with_cache.scores, without.scores, strict=True):
        assert_close_up_to_rounding(cached, recomputed, **sums)
    if num_beams > 1:
        assert (with_cache.beam_indices[:, 1:] != with_cache.beam_indices[:, :1]).any()  # beams were reordered


def assert_varied(sequences: torch.Tensor) -> None:
    """Decodings worth comparing: every row writes at least 3 distinct tokens, and no two rows are the same."""
    rows = [tuple(decoded(row)) for row in sequences.tolist()]
    assert all(len(set(row)) >= 3 for row in rows), rows
    assert len(set(rows)) == len(rows), rows


# --- a process without hf_vanilla ----------------------------------------------------------------------------------

# Runs in a fresh interpreter in which any import of hf_vanilla fails, as on a machine without the package.
LOADER = textwrap.dedent(
    """
    import sys, json, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "hf_vanilla" or name.startswith("hf_vanilla."):
                raise ImportError("hf_vanilla is not installed here")
    sys.meta_path.insert(0, Block())
    import torch
    from transformers import AutoModelForSeq2SeqLM
    folder, trust = sys.argv[1], sys.argv[2] == "1"
    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=trust)
    except Exception as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        raise SystemExit(0)
    ids = torch.tensor(json.loads(sys.argv[3]))
    mask = (ids != model.config.pad_token_id).long()
    out = {beams: model.generate(ids, attention_mask=mask, num_beams=beams).tolist() for beams in (1, 4)}
    print(json.dumps({"module": type(model).__module__, "greedy": out[1], "beam": out[4]}))
    """
)


def run_loader(folder, trust: bool, ids: torch.Tensor) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder), "1" if trust else "0", json.dumps(ids.tolist())],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(folder),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
