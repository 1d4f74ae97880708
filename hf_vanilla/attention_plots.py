"""Attention heatmaps of one sentence pair, like the paper's Figures 3-5: encoder self-attention, decoder
self-attention and cross-attention, per layer and head and averaged, with the tokens on the axes (matplotlib).

Decoder position i reads decoder token i (the start token first) and predicts token i + 1, so the decoder axis lists
the start token and the target without its final token; without a target, the target is the model's own decoding.

For a pointer-generator (`config.pointer_generator`), also p_gen of each target token, the probability that it was
generated from the vocabulary rather than copied from the source (See et al., 2017), as a bar chart."""

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .modeling_vanilla import VanillaPreTrainedModel
from .tokenization import truncate_ids

KINDS = ("encoder_self_attention", "decoder_self_attention", "cross_attention")
PLOTS_MISSING = "attention plots need matplotlib: pip install 'hf-vanilla[plots]'"


@dataclass
class AttentionMaps:
    """The weights of one pair, each (layers, heads, queries, keys): encoder self-attention over the source
    tokens, decoder self-attention over the decoder tokens, cross-attention from decoder to source tokens. For a
    pointer-generator, `p_gen` (one value per decoder position) is the probability that `target_tokens` (what each
    position predicts: the target with its </s>) came from the vocabulary rather than from copying, and
    `copy_attention` (decoder positions x source tokens) the distribution it copied with; else None."""

    source_tokens: list[str]
    decoder_tokens: list[str]
    encoder_self_attention: np.ndarray
    decoder_self_attention: np.ndarray
    cross_attention: np.ndarray
    target_tokens: list[str] | None = None
    p_gen: np.ndarray | None = None
    copy_attention: np.ndarray | None = None

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(row labels, column labels) of `kind`."""
        rows = self.source_tokens if kind == "encoder_self_attention" else self.decoder_tokens
        columns = self.decoder_tokens if kind == "decoder_self_attention" else self.source_tokens
        return rows, columns


def _labels(tokenizer, ids: list[int]) -> list[str]:
    """Readable tokens: special tokens as they are, others as the text they stand for (no byte-level or
    SentencePiece space marks)."""
    special = set(tokenizer.all_special_ids)
    labels = []
    for token_id, token in zip(ids, tokenizer.convert_ids_to_tokens(ids)):
        text = token if token_id in special else tokenizer.convert_tokens_to_string([token]).strip()
        labels.append(text or token)
    return labels


def with_attention_weights(model):
    """`model`, set to return the attention weights that `attention_maps` reads: a model other than hf_vanilla's
    (a MarianMTModel) is switched to eager attention, since its SDPA attention returns no weights."""
    if not isinstance(model, VanillaPreTrainedModel):
        model.set_attn_implementation("eager")
    return model


@torch.no_grad()
def attention_maps(
    model, tokenizer, source: str, target: str | None = None, max_source_tokens: int | None = None, **generate_kwargs
) -> AttentionMaps:
    """The attention weights of `model` reading `source` (its first `max_source_tokens` tokens with </s>, when given)
    and `target` (teacher-forced), or, without a target, its own decoding of `source` (`model.generate` with its
    generation config, updated by `generate_kwargs`); and a pointer-generator's p_gen."""
    model.eval()
    device = next(model.parameters()).device
    source_ids = torch.tensor([truncate_ids(tokenizer(source).input_ids, max_source_tokens)], device=device)
    start = model.config.decoder_start_token_id
    if target is None:
        output = model.generate(source_ids, attention_mask=torch.ones_like(source_ids), **generate_kwargs)[0].tolist()
        target_ids = output[1:]
        eos = model.config.eos_token_id
        if eos in target_ids:
            target_ids = target_ids[: target_ids.index(eos) + 1]
    else:
        target_ids = tokenizer(text_target=target).input_ids
    decoder_ids = [start] + target_ids[:-1]
    outputs = model(
        input_ids=source_ids,
        attention_mask=torch.ones_like(source_ids),
        decoder_input_ids=torch.tensor([decoder_ids], device=device),
        output_attentions=True,
        use_cache=False,
    )

    def stacked(weights) -> np.ndarray:
        return torch.cat(weights).float().cpu().numpy()  # (layers, heads, queries, keys): batch 1 folded

    return AttentionMaps(
        source_tokens=_labels(tokenizer, source_ids[0].tolist()),
        decoder_tokens=_labels(tokenizer, decoder_ids),
        encoder_self_attention=stacked(outputs.encoder_attentions),
        decoder_self_attention=stacked(outputs.decoder_attentions),
        cross_attention=stacked(outputs.cross_attentions),
        target_tokens=_labels(tokenizer, target_ids) if outputs.p_gen is not None else None,
        p_gen=outputs.p_gen[0].float().cpu().numpy() if outputs.p_gen is not None else None,
        copy_attention=outputs.copy_attention[0].float().cpu().numpy() if outputs.p_gen is not None else None,
    )


def _heatmap(axis, matrix: np.ndarray, rows: list[str], columns: list[str], title: str) -> None:
    image = axis.imshow(matrix, cmap="viridis", vmin=0.0, vmax=max(float(matrix.max()), 1e-6), aspect="auto")
    axis.figure.colorbar(image, ax=axis, shrink=0.8, label="attention weight")
    size = 8 if max(len(rows), len(columns)) <= 24 else max(3, 190 // max(len(rows), len(columns)))
    axis.set_xticks(range(len(columns)), columns, rotation=90, fontsize=size)
    axis.set_yticks(range(len(rows)), rows, fontsize=size)
    axis.set_title(title, fontsize=9)


def _figure(
    panels: list[tuple[np.ndarray, str]], rows: list[str], columns: list[str], path: Path | io.BytesIO
) -> None:
    from matplotlib.figure import Figure

    count = len(panels)
    width = min(count, int(np.ceil(np.sqrt(count))))
    height = int(np.ceil(count / width))
    cell = 0.9 + 0.22 * max(len(rows), len(columns))
    figure = Figure(figsize=(width * cell, height * cell), layout="constrained")
    grid = figure.subplots(height, width, squeeze=False)
    for axis, (matrix, title) in zip(grid.flat, panels):
        _heatmap(axis, matrix, rows, columns, title)
    for axis in list(grid.flat)[count:]:
        axis.set_axis_off()
    figure.savefig(path, dpi=110, format="png")


def p_gen_figure(maps: AttentionMaps):
    """A matplotlib `Figure` of a pointer-generator's p_gen: a bar per target token, from 0 (copied from the source)
    to 1 (generated from the vocabulary)."""
    from matplotlib.figure import Figure

    if maps.p_gen is None:
        raise ValueError("these maps hold no p_gen: the model is not a pointer-generator")
    figure = Figure(figsize=(max(4.5, 1.5 + 0.3 * len(maps.p_gen)), 3.2), layout="constrained")
    axis = figure.subplots()
    bars = axis.bar(range(len(maps.p_gen)), maps.p_gen, color=[(0.8 * (1 - p), 0.3, 0.8 * p) for p in maps.p_gen])
    axis.bar_label(bars, fmt="%.2f", fontsize=7)  # a value near 0 draws no visible bar
    axis.set_ylim(0.0, 1.0)
    axis.set_xticks(range(len(maps.target_tokens)), maps.target_tokens, rotation=90, fontsize=8)
    axis.set_ylabel("p_gen")
    axis.set_title(
        "p_gen of each output token\n(1: generated from the vocabulary, 0: copied from the source)", fontsize=8
    )
    return figure


def plot_attention(maps: AttentionMaps, output_dir: str | Path) -> list[Path]:
    """Writes, for each kind of attention, one PNG per layer (a panel per head and the heads' mean) and one of the
    mean over layers and heads, for a pointer-generator `p_gen.png` (`p_gen_figure`), plus `attention.npz` with the
    plotted matrices and the axis tokens (and `p_gen`, `target_tokens`). Returns the PNG paths."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise ImportError(PLOTS_MISSING) from error
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in KINDS:
        weights = getattr(maps, kind)
        rows, columns = maps.axes(kind)
        name = kind.replace("_", " ")
        for layer, heads in enumerate(weights, 1):
            panels = [(matrix, f"{name}, layer {layer}, head {h}") for h, matrix in enumerate(heads, 1)]
            panels.append((heads.mean(0), f"{name}, layer {layer}, mean of heads"))
            written.append(output_dir / f"{kind}_layer{layer}.png")
            _figure(panels, rows, columns, written[-1])
        written.append(output_dir / f"{kind}_mean.png")
        _figure([(weights.mean((0, 1)), f"{name}, mean of layers and heads")], rows, columns, written[-1])
    pointer = {}
    if maps.p_gen is not None:
        written.append(output_dir / "p_gen.png")
        p_gen_figure(maps).savefig(written[-1], dpi=110, format="png")
        pointer = dict(p_gen=maps.p_gen, target_tokens=np.array(maps.target_tokens))
    np.savez(
        output_dir / "attention.npz",
        source_tokens=np.array(maps.source_tokens),
        decoder_tokens=np.array(maps.decoder_tokens),
        **{kind: getattr(maps, kind) for kind in KINDS},
        **pointer,
    )
    return written


def attention_png(maps: AttentionMaps, kind: str, layer: int | None = None, head: int | None = None) -> bytes:
    """One heatmap of `kind` as PNG bytes: layer and head numbered from 1, None for the mean over all of them."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise ImportError(PLOTS_MISSING) from error
    weights = getattr(maps, kind)
    layers, heads = weights.shape[:2]
    if layer is not None and not 1 <= layer <= layers or head is not None and not 1 <= head <= heads:
        raise ValueError(f"layer {layer}, head {head} out of range: the model has {layers} layers of {heads} heads")
    chosen = weights if layer is None else weights[layer - 1 : layer]
    chosen = chosen if head is None else chosen[:, head - 1 : head]
    title = f"layer {layer}" if layer is not None else "mean of layers"
    title += f", head {head}" if head is not None else ", of heads" if layer is None else ", mean of heads"
    buffer = io.BytesIO()
    _figure([(chosen.mean((0, 1)), title)], *maps.axes(kind), buffer)
    return buffer.getvalue()


__all__ = [
    "KINDS",
    "PLOTS_MISSING",
    "AttentionMaps",
    "attention_maps",
    "attention_png",
    "p_gen_figure",
    "plot_attention",
]
