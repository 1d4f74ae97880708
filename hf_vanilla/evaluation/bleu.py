"""BLEU as sacreBLEU reports it, and the paper's tokenized BLEU with compound splitting."""

import re

import sacrebleu
from sacremoses import MosesTokenizer

_COMPOUND = re.compile(r"(\S)-(\S)")


def sacrebleu_score(hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    """Corpus sacreBLEU on detokenized text (13a tokenization) and its signature."""
    _check_lengths(hypotheses, references)
    metric = sacrebleu.BLEU()
    score = metric.corpus_score(hypotheses, [references])
    return round(score.score, 2), str(metric.get_signature())


def split_compounds(text: str) -> str:
    """tensor2tensor's get_ende_bleu.sh: `s{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g`, one left-to-right pass without
    overlapping matches, as Perl's /g makes it (so `a-b-c` keeps its second hyphen)."""
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", text)


def tokenized_bleu(hypotheses: list[str], references: list[str], lang: str = "de") -> float:
    """The paper's BLEU (its 28.4 on newstest2014 is this kind): Moses-tokenize hypothesis and reference, split
    hyphenated compounds, then plain multi-bleu style BLEU on the tokens (no further tokenization, no smoothing)."""
    _check_lengths(hypotheses, references)
    tokenizer = MosesTokenizer(lang=lang)

    def prepare(text: str) -> str:
        return split_compounds(tokenizer.tokenize(text, return_str=True, escape=False))

    score = sacrebleu.corpus_bleu(
        [prepare(h) for h in hypotheses], [[prepare(r) for r in references]], tokenize="none", smooth_method="none"
    )
    return round(score.score, 2)


def _check_lengths(hypotheses: list[str], references: list[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references.")
    if not hypotheses:
        raise ValueError("Nothing to score.")
