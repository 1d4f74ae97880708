"""The settings table every peer prints and records: a `Row` a setting (hf_vanilla's value beside the peer's flag that
gives it, or the reason none can), its Markdown (`render`) and the record's form (`as_records`); and the pieces of the
recipe's settings every peer's table reads (its rate, its decoding batches, its initialisation, its decoder start)."""

from dataclasses import asdict, dataclass

from hf_vanilla.batch_decoding import CPU_BEAM_ROWS
from hf_vanilla.configuration_vanilla import VanillaTransformerConfig
from hf_vanilla.training.schedule import peak_learning_rate

# The settings a run may change for a short check (`--max-updates` etc.); a full run changes none.
OVERRIDABLE = ("max_steps", "save_every", "eval_every", "average_last", "init_scheme", "decoder_start")


def peer_rate(s: dict) -> tuple[float, float]:
    """The peer's (lr_scale, peak learning rate): the preset's, or the scale `--peer-lr-scale` gave the peer
    (`peer_lr_scale`; the peak is proportional to it)."""
    scale = s.get("peer_lr_scale") or s["lr_scale"]
    return scale, s["peak_lr"] * scale / s["lr_scale"]


# hf_vanilla.batch_decoding.generate_texts' batches on a CPU (where the peers run): source tokens and beam rows.
DECODING_BATCHES = {"decode_max_tokens": 4000, "decode_beam_rows": CPU_BEAM_ROWS}


def decode_batch_sentences(s: dict) -> int:
    """The sentences a decoding batch holds at most under the beam-row cap of the settings `s`."""
    return max(1, s["decode_beam_rows"] // s["num_beams"])


def hf_decoding_batches(s: dict) -> str:
    """hf_vanilla's side of a table's decoding-batches row."""
    return (
        f"at most {s['decode_max_tokens']} source tokens and {s['decode_beam_rows']} beam rows (sentences x beams: "
        f"{decode_batch_sentences(s)} sentences)"
    )


@dataclass(frozen=True)
class Row:
    """One setting: its value in hf_vanilla's recipe, the peer's (a flag and its value, or what the peer does), and
    how they relate; `matched` is False where the peer cannot give the same."""

    setting: str
    hf_vanilla: str
    peer: str
    note: str = ""
    matched: bool = True


def resolved_training(run, model: VanillaTransformerConfig) -> dict:
    """A resolved recipe run's (`hf_vanilla.training.arguments.resolve`) optimizer, schedule, batch, checkpoint and
    validation settings, with its model's (`run_config`) initialisation, as summarization's and parsing's tables read
    them."""
    names = ("vocab_size", "adam_eps", "warmup_steps", "lr_scale", "tokens_per_step", "max_steps", "save_every")
    names += ("keep_last", "average_last", "eval_every", "decoder_start", "cooldown_steps")
    return {
        **{name: getattr(run, name) for name in names},
        "init_scheme": model.init_scheme,
        "adam_betas": run.betas,
        "peak_lr": peak_learning_rate(model.d_model, run.warmup_steps, run.lr_scale),
    }


def start_token(s: dict) -> str:
    """The token the recipe's decoder starts from under the settings `s` (`--decoder-start`)."""
    return "<s>" if s["decoder_start"] == "bos" else "</s>"


def initialisation(s: dict) -> str:
    """How the recipe draws a new model's weights under the settings `s` (`--init-scheme`)."""
    if s["init_scheme"] == "normal":
        return "--init-scheme normal: normal(0, init_std) projections, zero biases, normal(0, d^-0.5) embeddings"
    return (
        "--init-scheme fairseq: Xavier-uniform W^Q, W^K, W^V (gain 1/sqrt(2)) and W^O, nn.Linear's default elsewhere, "
        "normal(0, d^-0.5) embeddings"
    )


def render(rows: list[Row], peer: str) -> str:
    """The table as Markdown, the settings a peer cannot match marked and listed under it."""
    lines = [f"| setting | hf_vanilla | {peer} | note |", "|---|---|---|---|"]
    for row in rows:
        mark = "" if row.matched else " (not matched)"
        lines.append(f"| {row.setting}{mark} | {row.hf_vanilla} | {row.peer} | {row.note} |")
    unmatched = [row.setting for row in rows if not row.matched]
    if unmatched:
        lines.append(f"\n{peer} cannot match: {', '.join(unmatched)}.")
    return "\n".join(lines)


def as_records(rows: list[Row]) -> list[dict]:
    """The rows as the record's `settings`."""
    return [asdict(row) for row in rows]
