"""Imported by Python at start-up when this folder is on PYTHONPATH: installs the mutation that HF_VANILLA_MUTATION
names (see hf_vanilla_mutations.py), in this process and the processes it starts."""

import os

if os.environ.get("HF_VANILLA_MUTATION"):
    import hf_vanilla_mutations

    hf_vanilla_mutations.install(os.environ["HF_VANILLA_MUTATION"])
