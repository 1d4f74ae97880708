"""hf_vanilla's benchmarks, a package run from the repository's root (`python -m benchmarks.compare_marian ...`)."""
