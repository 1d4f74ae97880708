"""What each filter of a run kept and dropped, split by split, and why: one log line a filter, and the counts in
`run.filters`, which results.json and the card carry as `filters`:

    {"train": {"pairs": 400, "kept": 105,
               "dropped": {"with more than 16 source words (--max-train-source-words)": 282,
                           "with a length ratio above 1.5 (--max-length-ratio)": 13}},
     "test": {"pairs": 50, "kept": 50, "dropped": {}},
     "evaluation": {"split": "test", "pairs": 50, "kept": 40,
                    "dropped": {"after the first 40 (--eval-sentences)": 10}}}

so that no figure is reported on part of a split without a word. `pairs` is what the corpus held, `kept` what the run
used; `evaluation` is the part of the held-out split decoded and scored at the end."""

from accelerate.logging import get_logger

from .context import RunContext

logger = get_logger(__name__)
# A log line names at most this many rows of a kind (then says how many more).
LISTED = 10


def rows_text(rows: list[int], count: int) -> str:
    """`rows` (numbers from 1: lines of a text corpus) as "5, 9 and 3 more" for `count` rows in all."""
    more = f" and {count - len(rows[:LISTED]):,} more" if count > len(rows[:LISTED]) else ""
    return ", ".join(str(row) for row in rows[:LISTED]) + more


def record_filter(run: RunContext, split: str, what: str, total: int, dropped: dict[str, int], note: str = "") -> None:
    """Counts a filter `what` (e.g. "Length filter (at most 250 tokens a side)") that left `split` of `total` pairs
    without `dropped` ({reason: pairs}) in `run.filters`, and logs it in one line, with `note` after it."""
    removed = {reason: count for reason, count in dropped.items() if count}
    kept = total - sum(removed.values())
    entry = run.filters.setdefault(split, {"pairs": total, "kept": total, "dropped": {}})
    entry["kept"] = kept
    for reason, count in removed.items():
        entry["dropped"][reason] = entry["dropped"].get(reason, 0) + count
    reasons = "; dropped " + ", ".join(f"{count:,} {reason}" for reason, count in removed.items()) if removed else ""
    counted = f"kept {kept:,} of {total:,}" if removed else f"kept all {total:,}"
    logger.info(f"{what}: {counted} {split} pairs{reasons}{note}", main_process_only=True)


def record_selection(run: RunContext, counts: dict[str, dict], whole: tuple[str, ...]) -> None:
    """The word-limit selection's counts (`data.corpora.selected_pairs`) for each split: pairs with an empty side or
    over the split's word limit dropped, the empty ones named by their rows; the splits in `whole` (the held-out
    splits of a corpus of one's own, `RunSettings.filters_held_out`) kept whole, their empty sides named."""
    order = {"train": 0, "validation": 1, "test": 2}
    for split, count in sorted(counts.items(), key=lambda item: order.get(item[0], len(order))):
        empty = rows_text(count["empty_rows"], count["empty_side"])
        if split in whole:
            note = f"; {count['empty_side']:,} with an empty side (rows {empty}) kept" if empty else ""
            note += (
                ": the held-out splits of a corpus of one's own are decoded and scored whole "
                "(--skip-invalid-size-inputs-valid-test filters them)"
            )
            record_filter(run, split, "Selection", count["pairs"], {}, note)
            continue
        flag = "--max-train-source-words" if split == "train" else "--max-source-words"
        dropped = {
            "with an empty side": count["empty_side"],
            f"with more than {run.settings.word_limit(split)} source words ({flag})": count["too_many_words"],
        }
        record_filter(run, split, "Selection", count["pairs"], dropped, f" (empty: rows {empty})" if empty else "")


def record_evaluation(run: RunContext, total: int, count: int) -> None:
    """The part of the held-out split (--eval-split, `total` items) decoded and scored at the end, `evaluation` in
    `run.filters`: its first `count`, said with the flag that chose it (and why, in a check run:
    `RunSettings.check_run`)."""
    settings, skipped = run.settings, total - count
    reason = f"after the first {count:,} (--eval-sentences)"
    run.filters["evaluation"] = {
        "split": settings.eval_split,
        "pairs": total,
        "kept": count,
        "dropped": {reason: skipped} if skipped else {},
    }
    if not skipped:
        line = f"all {total:,} {settings.eval_split} items"
    else:
        line = f"the first {count:,} of {total:,} {settings.eval_split} items (--eval-sentences {count})"
        if settings.check_run:
            line += (
                f": a check run ({settings.max_steps} updates, fewer than the preset's) decodes at most {count} "
                "unless told; --eval-sentences 0 decodes them all"
            )
    logger.info(f"Evaluation at the end: {line}", main_process_only=True)
