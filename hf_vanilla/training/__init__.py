"""The paper's optimisation, the shared Accelerate training loop, checkpoints and presets."""
