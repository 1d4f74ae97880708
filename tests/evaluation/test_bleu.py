"""BLEU against an independent computation."""

import math
from collections import Counter

import pytest

from hf_vanilla.evaluation.bleu import sacrebleu_score, split_compounds, tokenized_bleu


def reference_bleu(hypotheses: list[list[str]], references: list[list[str]]) -> float:
    """Papineni et al. (2002) corpus BLEU-4 written out: clipped n-gram precisions, geometric mean, brevity penalty."""
    matches, totals = [0] * 4, [0] * 4
    hyp_length = ref_length = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_length, ref_length = hyp_length + len(hyp), ref_length + len(ref)
        for n in range(1, 5):
            h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
            r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    brevity = min(1.0, math.exp(1 - ref_length / hyp_length))
    return 100 * brevity * math.exp(log_precision)


REFS = ["Die Katze sitzt auf der Matte.", "Das ist ein sehr gutes Ergebnis für alle Beteiligten."]
HYPS = ["Die Katze sitzt auf einer Matte.", "Das ist ein gutes Ergebnis für alle Beteiligten."]


def test_reference_scored_against_itself_is_100():
    assert sacrebleu_score(REFS, REFS)[0] == 100.0
    assert tokenized_bleu(REFS, REFS) == 100.0


def test_sacrebleu_reports_its_signature():
    score, signature = sacrebleu_score(HYPS, REFS)
    assert 0 < score < 100 and "tok:13a" in signature and "nrefs:1" in signature


def test_tokenized_bleu_equals_an_independent_computation():
    # Moses tokenization splits the final period; compound splitting does not apply here.
    tokenized_refs = [r.replace(".", " .").split() for r in REFS]
    tokenized_hyps = [h.replace(".", " .").split() for h in HYPS]
    assert tokenized_bleu(HYPS, REFS) == pytest.approx(reference_bleu(tokenized_hyps, tokenized_refs), abs=0.01)


def test_compound_splitting_as_tensor2tensor():
    assert split_compounds("Ost-West-Beziehungen und E-Mail - ok") == (
        "Ost ##AT##-##AT## West ##AT##-##AT## Beziehungen und E ##AT##-##AT## Mail - ok"
    )
    assert split_compounds("a-b-c") == "a ##AT##-##AT## b-c"  # Perl's non-overlapping /g
    # A hyphenated compound is three tokens, so getting one half right earns partial credit.
    assert (
        0
        < tokenized_bleu(
            ["die Ost-Ost-Beziehungen sind heute sehr gut"], ["die Ost-West-Beziehungen sind heute sehr gut"]
        )
        < 100
    )


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        sacrebleu_score(HYPS, REFS[:1])
