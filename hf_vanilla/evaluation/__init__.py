"""Decoding a held-out set and scoring it (BLEU, EVALB, ROUGE), each task's `*_and_score` giving an `Evaluation`."""

from .result import Evaluation

__all__ = ["Evaluation"]
