"""What scoring a held-out set gives, the same for every task."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Evaluation:
    """`figures`: the metric's fields of results.json (`sacrebleu`, `evalb_f1`, `rouge1`, ...) and the count scored;
    `predictions`: the model's output for each item as the task writes it (a translation, a repaired tree, a
    summary); `samples`: {"source", "reference", "hypothesis"} for each item, which the card and the log show."""

    figures: dict
    predictions: list[str]
    samples: list[dict]

    @classmethod
    def of(cls, figures: dict, sources: list[str], references: list[str], predictions: list[str]) -> "Evaluation":
        """The evaluation of `predictions` for `sources` against (first) `references`, with its samples."""
        samples = [{"source": s, "reference": r, "hypothesis": p} for s, r, p in zip(sources, references, predictions)]
        return cls(figures, predictions, samples)
