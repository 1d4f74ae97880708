"""Translating a held-out set with the model's decoding and scoring it with sacreBLEU and the paper's BLEU."""

from ..batch_decoding import generate_texts
from .bleu import sacrebleu_score, tokenized_bleu
from .result import Evaluation


def translate_and_score(
    model,
    tokenizer,
    sources: list[str],
    references: list[str],
    target_lang: str,
    progress: bool = True,
    **generate_kwargs,
) -> Evaluation:
    """Translates `sources` (the model's generation config, overridden by `generate_kwargs`) and scores them against
    `references`: figures holding `sacrebleu`, its signature, `tokenized_bleu` and `eval_sentences`."""
    hypotheses = generate_texts(model, tokenizer, sources, progress=progress, **generate_kwargs)
    bleu, signature = sacrebleu_score(hypotheses, references)
    figures = {
        "sacrebleu": bleu,
        "sacrebleu_signature": signature,
        "tokenized_bleu": tokenized_bleu(hypotheses, references, target_lang),
        "eval_sentences": len(sources),
    }
    return Evaluation.of(figures, sources, references, hypotheses)
