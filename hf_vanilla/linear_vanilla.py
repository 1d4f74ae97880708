"""`VanillaLinear`: `nn.Linear` with a faster CPU path for the few rows of a decoding step.

Kept apart from `modeling_vanilla.py` because it is an implementation detail of one device, not part of the paper's
model: the model file reads as section 3, and this file holds the speed-up with the reason for each of its
conditions. It travels with the model as Hub remote code (transformers copies the model file's single-dot imports).
The measurements behind the thresholds are in `docs/experiments.md` ("CPU decoding: sliced products").
"""

import torch
from torch import nn


class VanillaLinear(nn.Linear):
    """`nn.Linear` (same parameters, same function) that computes a decoding step's few rows on the CPU as one batched
    product over `slices` slices of its output features (`torch.bmm` over views of the same weight, no copy). The
    result differs from `nn.Linear`'s by rounding only.

    Why: for a few rows, MKL's GEMM (what `nn.Linear` calls) runs far below the memory bandwidth that reading the
    weight needs; the same product as 16 independent slices does not."""

    few_rows = 128  # from 256 rows on, the sliced product is slower than the GEMM
    min_weight = 512 * 512  # below this, the batched call's fixed cost exceeds the gain
    slices = 16  # 2-16 slices are alike for one row; 16 is best at 4-64 rows

    def _takes_sliced_path(self, hidden_states: torch.Tensor, rows: int) -> bool:
        return (
            rows <= self.few_rows
            and self.weight.numel() >= self.min_weight
            and self.out_features >= self.slices  # every slice holds at least one output feature
            and hidden_states.device.type == "cpu"  # the gap is MKL's: GPUs take the GEMM
            and hidden_states.dtype == torch.float32  # other dtypes have other kernels, not measured
            and self.weight.dtype == torch.float32
            and type(self.weight) is nn.Parameter  # a tensor subclass (e.g. a quantized weight) has its own kernels
            and not torch.is_grad_enabled()  # training takes the GEMM, and autograd through bmm would cost memory
            and not torch.is_autocast_enabled("cpu")  # autocast casts inside nn.Linear; bmm would bypass it
        )

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        rows = hidden_states.numel() // self.in_features
        if not self._takes_sliced_path(hidden_states, rows):
            return super().forward(hidden_states)
        width = self.out_features // self.slices
        sliced = width * self.slices
        inputs = hidden_states.reshape(rows, self.in_features)
        products = inputs.expand(self.slices, rows, self.in_features)
        weight, bias = self.weight, self.bias
        if sliced < self.out_features:
            weight, bias = weight[:sliced], None if bias is None else bias[:sliced]
        weight = weight.reshape(self.slices, width, self.in_features).mT
        if bias is None:
            output = torch.bmm(products, weight)
        else:
            output = torch.baddbmm(bias.view(self.slices, 1, width), products, weight)
        output = output.transpose(0, 1).reshape(rows, sliced)
        if sliced < self.out_features:  # the last out_features % slices features, e.g. of a 37,001-token vocabulary
            bias = None if self.bias is None else self.bias[sliced:]
            output = torch.cat([output, nn.functional.linear(inputs, self.weight[sliced:], bias)], dim=-1)
        return output.view(*hidden_states.shape[:-1], self.out_features)


class VanillaFusedProjection(VanillaLinear):
    """`num_blocks` projections d_model -> d_model stacked in one matrix, so that one matmul computes them all
    (queries, keys and values: W^Q, W^K, W^V of section 3.2.2)."""

    def __init__(self, d_model: int, num_blocks: int, bias: bool = True):
        super().__init__(d_model, num_blocks * d_model, bias=bias)


__all__ = ["VanillaFusedProjection", "VanillaLinear"]
