"""Publishing a trained model folder to the Hugging Face Hub."""

from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

REQUIRED_FILES = ("config.json", "model.safetensors", "modeling_vanilla.py", "configuration_vanilla.py", "tokenizer.json")


class PublishError(RuntimeError):
    """A publishing step failed for a reason the user can fix (no token, no network, incomplete folder)."""


def push_model_folder(folder: Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Uploads `folder` (weights, config with auto_map, model code, tokenizer, generation config, card, results) to
    `repo_id`, creating the repo if needed. Returns the commit URL."""
    folder = Path(folder)
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise PublishError(f"{folder} is not a complete model folder: missing {', '.join(missing)}.")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message="Upload hf_vanilla model")
    except LocalTokenNotFoundError as error:
        raise PublishError("No Hugging Face token: run `hf auth login` or set HF_TOKEN.") from error
    except HfHubHTTPError as error:
        raise PublishError(f"The Hub refused the upload to {repo_id}: {error}") from error
    except OSError as error:  # connection errors
        raise PublishError(f"Could not reach the Hugging Face Hub to push {repo_id}: {error}") from error
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)
