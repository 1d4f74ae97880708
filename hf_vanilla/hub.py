"""Publishing a trained model to the Hugging Face Hub: one function builds the exact folder that is uploaded."""

import json
import shutil
from pathlib import Path

from huggingface_hub import HfApi, ModelCard, get_token
from huggingface_hub.errors import HfHubHTTPError, HTTPError, LocalTokenNotFoundError
from transformers import AutoTokenizer

from .cards import check_card, load_results, render_model_card
from .modeling_vanilla import VanillaTransformerForConditionalGeneration

REQUIRED_FILES = (
    "config.json",
    "model.safetensors",
    "modeling_vanilla.py",
    "configuration_vanilla.py",
    "tokenizer.json",
    "generation_config.json",
    "README.md",
    "results.json",
)


class PublishError(RuntimeError):
    """A publishing step failed for a reason the user can fix (no token, no network, incomplete folder)."""


def model_folder_of(run_or_model: Path) -> Path:
    """The model folder of a recipe's output folder (its averaged `final/`), or the folder itself if it holds a
    model."""
    run_or_model = Path(run_or_model)
    for folder in (run_or_model / "final", run_or_model):
        if (folder / "config.json").is_file():
            return folder
    raise PublishError(f"{run_or_model} holds no model (no config.json in it or in its final/ folder)")


def build_hub_folder(run_or_model: Path, destination: Path, repo_id: str) -> Path:
    """Writes to `destination` exactly what is uploaded to `repo_id`: safetensors weights, `config.json` with
    `auto_map` and the model's code files (loadable with `trust_remote_code=True` without hf_vanilla installed), the
    tokenizer, `generation_config.json` with the paper's decoding, `results.json` and the card (README.md) rendered
    from it. `run_or_model` is a recipe's output folder or a model folder holding its `results.json`."""
    model_folder = model_folder_of(run_or_model)
    results_folder = model_folder if (model_folder / "results.json").is_file() else Path(run_or_model)
    results = load_results(results_folder)
    model = VanillaTransformerForConditionalGeneration.from_pretrained(model_folder)
    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    card = render_model_card(results, model.config, model.generation_config, repo_id)
    destination = Path(destination)
    if destination.exists():
        shutil.rmtree(destination)
    model.save_pretrained(destination)
    tokenizer.save_pretrained(destination)
    (destination / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    card.save(destination / "README.md")
    return destination


def push_model_folder(folder: Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Uploads `folder` (weights, config with auto_map, model code, tokenizer, generation config, card, results) to
    `repo_id`, creating the repo if needed. Returns the commit URL."""
    folder = Path(folder)
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise PublishError(
            f"{folder} is not a complete Hub folder (build it with build_hub_folder): missing {', '.join(missing)}."
        )
    check_card(ModelCard.load(folder / "README.md"), load_results(folder))
    if (token or get_token()) is None:
        raise PublishError("No Hugging Face token: run `hf auth login` or set HF_TOKEN, then push again.")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message="Upload hf_vanilla model")
    except LocalTokenNotFoundError as error:
        raise PublishError("No Hugging Face token: run `hf auth login` or set HF_TOKEN.") from error
    except HfHubHTTPError as error:
        raise PublishError(f"The Hub refused the upload to {repo_id}: {error}") from error
    except (OSError, HTTPError) as error:  # no network, offline mode
        raise PublishError(f"Could not reach the Hugging Face Hub to push {repo_id}: {error}") from error
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)
