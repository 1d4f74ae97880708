"""Runs a recipe as a torchrun worker with its model sharded by FSDP2 on the CPU (gloo). Accelerate offers FSDP only
with accelerators; for the tests, this switches the CPU process group it creates to FSDP before the recipe prepares
its model, so that the recipe's own FSDP code paths (sharded training, gathered checkpoints, resume, averaging,
evaluation) run on a machine without a GPU.

    torchrun --nproc_per_node 2 tests/fsdp_on_cpu.py recipes/wmt_ende.py --preset tiny ...

The worker leaves with os._exit once the recipe is done (its process group destroyed): FSDP2's device mesh keeps
the gloo process group, hence its worker threads, alive past destroy_process_group, and a worker thread freeing its
last all-gather's tensors while the interpreter finalizes aborts the process ("terminate called without an active
exception"; gdb shows ~AsyncAllgatherWork taking the GIL in pt_gloo_runloop during Py_FinalizeEx; pytorch/pytorch
#179291). One run in four did on 2 cores. DDP runs free their gloo group in destroy_process_group and are not affected.
"""

import os
import runpy
import sys

from accelerate.state import AcceleratorState
from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

_initialise = AcceleratorState.__init__


def _initialise_with_fsdp(self, *args, **kwargs):
    _initialise(self, *args, **kwargs)
    if self.distributed_type == DistributedType.MULTI_CPU:
        self.distributed_type = DistributedType.FSDP
        self.fsdp_plugin = FullyShardedDataParallelPlugin(
            fsdp_version=2,
            auto_wrap_policy="transformer_based_wrap",
            transformer_cls_names_to_wrap=["VanillaEncoderLayer", "VanillaDecoderLayer"],
        )


if __name__ == "__main__":
    AcceleratorState.__init__ = _initialise_with_fsdp
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))  # as `python recipe.py` puts its folder first
    code = 0
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
