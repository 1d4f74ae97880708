"""Publishing a trained model to the Hugging Face Hub, and its demo as a Gradio Space: for each, one function builds
the exact folder that is uploaded."""

import importlib.metadata
import json
import platform
import shutil
from pathlib import Path

from huggingface_hub import HfApi, ModelCard, SpaceCard, SpaceCardData, get_token
from huggingface_hub.errors import HfHubHTTPError, HTTPError, LocalTokenNotFoundError
from transformers import AutoTokenizer

from .cards import check_card, load_results, render_model_card
from .modeling_vanilla import VanillaTransformerForConditionalGeneration

# The model's source files `save_pretrained` writes beside the weights (the modeling file and its relative imports):
# what a Hub loader runs as remote code.
REMOTE_CODE_FILES = (
    "modeling_vanilla.py",
    "pointer_generator_vanilla.py",
    "configuration_vanilla.py",
    "generation_vanilla.py",
    "beam_search_vanilla.py",
    "decoding_settings.py",
)
REQUIRED_FILES = (
    "config.json",
    "model.safetensors",
    *REMOTE_CODE_FILES,
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
    return _upload(folder, repo_id, "model", private, token)


def _upload(folder: Path, repo_id: str, repo_type: str, private: bool, token: str | None, **create_kwargs) -> str:
    """Uploads `folder` to the `repo_type` repository `repo_id`, creating it if needed; returns the commit URL."""
    if (token or get_token()) is None:
        raise PublishError("No Hugging Face token: run `hf auth login` or set HF_TOKEN, then push again.")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type=repo_type, **create_kwargs)
        commit = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type=repo_type,
            commit_message=f"Upload hf_vanilla {repo_type}",
        )
    except LocalTokenNotFoundError as error:
        raise PublishError("No Hugging Face token: run `hf auth login` or set HF_TOKEN.") from error
    except HfHubHTTPError as error:
        raise PublishError(f"The Hub refused the upload to {repo_id}: {error}") from error
    except (OSError, HTTPError) as error:  # no network, offline mode
        raise PublishError(f"Could not reach the Hugging Face Hub to push {repo_id}: {error}") from error
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)


# What the demo app imports beyond hf_vanilla's own dependencies (the `app` extra).
APP_REQUIREMENTS = ("gradio", "matplotlib")
SPACE_APP = '''"""The hf_vanilla demo of {models}: a Gradio Space built by `hf-vanilla push --space`."""

from hf_vanilla.app import launch

launch({models!r})
'''


def space_requirements() -> list[str]:
    """hf_vanilla's dependencies and the app's, each pinned to the version installed here: the versions the demo was
    tested with (a local build tag such as torch's `+cpu` dropped, so that pip finds them on PyPI)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    try:
        declared = [Requirement(line) for line in importlib.metadata.requires("hf-vanilla") or []]
    except importlib.metadata.PackageNotFoundError:
        raise PublishError(
            "hf-vanilla is not installed (pip install -e '.[app]'): its dependencies are unknown"
        ) from None
    names = [r.name for r in declared if r.marker is None or "extra" not in str(r.marker)] + list(APP_REQUIREMENTS)
    pins = []
    for name in dict.fromkeys(names):
        try:
            pins.append(f"{name}=={Version(importlib.metadata.version(name)).public}")
        except importlib.metadata.PackageNotFoundError:
            raise PublishError(
                f"{name} is not installed here, so the Space cannot pin it: pip install 'hf-vanilla[app]'"
            ) from None
    return pins


def build_space_folder(destination: Path, models: list[str], space_id: str) -> Path:
    """Writes to `destination` exactly what is uploaded to the Space `space_id`: `app.py` serving the demo of the Hub
    `models` (`hf_vanilla.app`), this hf_vanilla package beside it (the Space imports it from there),
    `requirements.txt` pinned to the versions installed here, and a README whose YAML header declares the Gradio SDK,
    its version, the app file and the models."""
    if not models:
        raise PublishError("A Space needs at least one model to show.")
    pins = space_requirements()
    gradio_version = next(pin.split("==")[1] for pin in pins if pin.startswith("gradio=="))
    destination = Path(destination)
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(Path(__file__).parent, destination / "hf_vanilla", ignore=shutil.ignore_patterns("__pycache__"))
    (destination / "app.py").write_text(SPACE_APP.format(models=list(models)))
    (destination / "requirements.txt").write_text("".join(pin + "\n" for pin in pins))
    data = SpaceCardData(
        title=f"hf_vanilla: {space_id.split('/')[-1]}",
        sdk="gradio",
        sdk_version=gradio_version,
        python_version=".".join(platform.python_version_tuple()[:2]),
        app_file="app.py",
        models=list(models),
        license="apache-2.0",
        tags=["transformer", "attention-is-all-you-need"],
    )
    listed = "\n".join(f"- [{model}](https://huggingface.co/{model})" for model in models)
    body = (
        f"# {space_id}\n\nA demo of the Transformer of *Attention Is All You Need* (Vaswani et al., 2017), trained "
        f"with hf_vanilla: a tab for each model's task (translation with its cross-attention, "
        f"parsing with the tree drawn).\n\n{listed}\n\nBuilt by `hf-vanilla push --space {space_id}`; run it "
        f"locally with `hf-vanilla app {' '.join(models)}`.\n"
    )
    SpaceCard(f"---\n{data.to_yaml()}\n---\n\n{body}").save(destination / "README.md")
    return destination


def push_space_folder(folder: Path, space_id: str, private: bool = False, token: str | None = None) -> str:
    """Uploads a folder built by `build_space_folder` to the Gradio Space `space_id`, creating it if needed. Returns
    the commit URL."""
    missing = [name for name in ("app.py", "requirements.txt", "README.md") if not (Path(folder) / name).is_file()]
    if missing:
        raise PublishError(
            f"{folder} is not a Space folder (build it with build_space_folder): missing {', '.join(missing)}."
        )
    return _upload(Path(folder), space_id, "space", private, token, space_sdk="gradio")
