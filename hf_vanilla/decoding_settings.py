"""The decoding settings in one place: the paper's decoding rows (`DECODING`), each setting a user may set (`SETTINGS`:
its name, type, least value, help and the tasks that offer it) and the limits on what a decoding reads.

Standard library only: the console script reads this file by path, without importing torch, transformers or the
package (`hf-vanilla --help` answers at once), and `configuration_vanilla.py` imports it, so that `save_pretrained`
copies it beside the model as Hub remote code. Readers: the recipes' flags (`training.arguments`, `recipes/`), both
command-line files, the tuning script and the app."""

from dataclasses import dataclass

# The paper's decoding (sections 6.1 and 6.3), the one place it is written: beam size, GNMT length penalty alpha,
# maximum output length = source length + offset, early stopping. A model's `config.decoding` names its row, and
# `VanillaGenerationConfig.from_model_config` turns that row into the model's `generation_config`.
# Summaries are not as long as their documents: their row bounds the summary itself, min_new_tokens to max_new_tokens
# tokens (</s> not counted; at least 1: never an empty summary), forbids repeating any 3-gram (Paulus et al.,
# 2018), the usual cure for a summarizer's loops, and any span of up to 4 tokens twice in a row that the source does
# not hold so (a copying model's sub-word stutter). Its alpha and length bounds are starting points, to be tuned on
# validation data, here in this one row.
DECODING: dict[str, dict] = {
    "translation": dict(num_beams=4, length_penalty=0.6, length_penalty_style="gnmt", max_length_offset=50),
    "parsing": dict(num_beams=21, length_penalty=0.3, length_penalty_style="gnmt", max_length_offset=300),
    "summarization": dict(
        num_beams=4,
        length_penalty=1.0,
        length_penalty_style="gnmt",
        no_repeat_ngram_size=3,
        no_stutter_span_size=4,
        min_new_tokens=1,
        max_new_tokens=64,
    ),
}

EVERY_TASK = tuple(DECODING)
SUMMARIES = ("summarization",)


@dataclass(frozen=True)
class DecodingSetting:
    """One decoding setting a user may set: `name` is `generate()`'s keyword (and, spelt `--name-with-dashes`, the
    flag); `least` its smallest value (None: unbounded); `tasks` the tasks whose decoding commands (hf-vanilla's
    subcommands, the app's tabs, the tuning script) offer it. Its default is the model's generation config, which a
    new model takes from its task's `DECODING` row."""

    name: str
    type: type
    least: int | None
    help: str
    tasks: tuple[str, ...]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def help_for(self, task: str | None, origin: str = "the model's generation config") -> str:
        """The help text with its default, `origin`, and for a model of `task` (None: any) a new model's value."""
        if task is None:
            return f"{self.help} Default: {origin} (a new model's: its task's DECODING row)."
        row = DECODING[task]
        new = f"; a new {task} model's is {row[self.name]}" if self.name in row else ""
        return f"{self.help} Default: {origin}{new}."


# In the order the summarizer's settings are passed to the app's endpoint (no-stutter last, as added last).
SETTINGS: dict[str, DecodingSetting] = {
    setting.name: setting
    for setting in (
        DecodingSetting("num_beams", int, 1, "Beam size.", EVERY_TASK),
        DecodingSetting(
            "length_penalty",
            float,
            None,
            "Length penalty alpha: finished beams are ranked by log P(Y|X) / ((5 + |Y|) / 6)^alpha (GNMT; higher "
            "favours longer outputs).",
            EVERY_TASK,
        ),
        # Set when training (every recipe's --max-length-offset) and saved in the generation config; no decoding
        # command offers it: a MarianMTModel, which `hf-vanilla translate` also runs, has no such keyword.
        DecodingSetting("max_length_offset", int, 0, "Longest output = source length + this many tokens.", ()),
        DecodingSetting(
            "no_repeat_ngram_size",
            int,
            0,
            "No n-gram of this size twice in a summary (0: no such rule).",
            SUMMARIES,
        ),
        DecodingSetting("min_new_tokens", int, 0, "Shortest summary, in tokens (</s> not counted).", SUMMARIES),
        DecodingSetting("max_new_tokens", int, 1, "Longest summary, in tokens (</s> not counted).", SUMMARIES),
        DecodingSetting(
            "no_stutter_span_size",
            int,
            0,
            "No span of 1 to this many tokens twice in a row (a sub-word stutter) unless the document has it twice in "
            "a row (0: no such rule).",
            SUMMARIES,
        ),
    )
}


def settings_for(task: str) -> list[DecodingSetting]:
    """The settings a user may set when decoding with a model of `task`, in `SETTINGS`' order."""
    return [setting for setting in SETTINGS.values() if task in setting.tasks]


def least_values(names) -> dict[str, int]:
    """name -> least value of the settings `names` that have one (for `flag_bounds.bound_problems`)."""
    return {name: SETTINGS[name].least for name in names if SETTINGS[name].least is not None}


# The limits on what a decoding reads, in tokens of the model's tokenizer (</s> counted).
# `hf-vanilla translate` / `parse`: a longer input line is skipped (an empty output line), with a warning.
MAX_INPUT_TOKENS = 1024
# `hf-vanilla summarize`: a longer document is cut to this many, when neither --max-input-tokens nor the model (its
# tokenizer's model_max_length, the limit it was trained with) sets the limit.
SUMMARY_INPUT_TOKENS = 1024
# The app (`hf-vanilla app`, a Space): a longer input is refused in the page; decoding time grows with it, and a
# public Space should not be held by one request.
APP_INPUT_TOKENS = 200
