"""Float comparisons that hold on any CPU: the rounding bound of two computations of the same values."""

import math

import torch


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


def pointer_sums(config, steps: int = 1) -> dict[str, int]:
    """`transformer_sums` of a pointer-generator's log P (see `rounding_tolerance`): 3 more sums in sequence
    (the gate over [c_t; s_t; x_t], 3 d_model wide; the copy's scatter-add; the log of the mixture), and `steps` times
    that depth for scores summed over decoding steps."""
    sums = transformer_sums(config)
    return dict(depth=(sums["depth"] + 3) * steps, width=max(sums["width"], 3 * config.d_model))
