"""One run of a recipe, handed from step to step (`training.run`) and to the training loop: its settings, its
`Accelerator`, its output folder, and the tokenizer, model and training figures once they exist."""

from dataclasses import dataclass, field
from pathlib import Path

from accelerate import Accelerator
from transformers import PreTrainedTokenizerBase

from ..configuration_vanilla import VanillaTransformerConfig
from ..modeling_vanilla import VanillaTransformerForConditionalGeneration
from .arguments import RunSettings
from .run_folder import RunFolder


@dataclass(frozen=True)
class TrainingResult:
    """What a training run did, for results.json and the card."""

    steps: int
    epochs: int
    train_seconds: float
    train_tokens: int
    train_tokens_per_second: float
    final_loss: float
    padding_fraction: float
    mixed_precision: str
    batch_tokens: int
    best_step: int | None = None  # the update of OUTPUT_DIR/best, the best validation by best_checkpoint_metric
    best_valid_loss: float | None = None  # that update's validation loss
    best_checkpoint_metric: str | None = None
    best_value: float | None = None  # that update's best_checkpoint_metric
    stopped_early: bool = False  # by --patience
    stopped_by_signal: str | None = None
    dynamo_backend: str = "no"  # torch.compile's backend (`accelerate launch --dynamo_backend` or --torch-compile)
    compiled_graphs: int = 0  # graphs torch.compile built in training: 1 plus its recompilations


@dataclass
class RunContext:
    """One run: `name` (the recipe's: the tracker's project, the default folder runs/NAME or runs/NAME-PRESET),
    `settings` (the command line merged with the preset, `training.arguments.resolve`), `accelerator`, `output_dir`,
    `config` (the model's configuration, `training.model_building.run_config`); then, as the steps of `training.run`
    set them, `tokenizer` (`build_tokenizer`), `model` (`build_model`; after training, the averaged model),
    `training` (what training did), `averaged` (the checkpoints averaged into OUTPUT_DIR/final), `truncated` (what
    encoding each split cut, where the recipe truncates), `copyable` (how much of each split's targets its sources
    hold, where the recipe counts it) and `filters` (what each filter kept and dropped of each split,
    `training.data_filters`); `host_malloc` and `folder` are set in `start` (`training.host_memory`,
    `training.run_folder`)."""

    name: str
    settings: RunSettings
    accelerator: Accelerator
    output_dir: Path
    config: VanillaTransformerConfig | None = None  # the model's, decided in `start` (`model_building.run_config`)
    tokenizer: PreTrainedTokenizerBase | None = None
    model: VanillaTransformerForConditionalGeneration | None = None
    training: TrainingResult | None = None
    averaged: list[str] = field(default_factory=list)
    truncated: dict[str, dict] = field(default_factory=dict)  # split -> truncation counts (`run.encode_split`)
    copyable: dict[str, dict] = field(default_factory=dict)  # split -> `data.copyable.copyable_tokens`
    filters: dict[str, dict] = field(default_factory=dict)  # split -> what its filters kept and dropped
    host_malloc: str = "system"  # the allocation in force (`host_memory.apply_host_malloc`)
    folder: RunFolder | None = None  # the run's id in its folder (`run_folder.claim_run_folder`), set in `start`

    @property
    def is_main_process(self) -> bool:
        return self.accelerator.is_main_process
