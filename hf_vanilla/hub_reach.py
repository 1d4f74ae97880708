"""Whether the Hugging Face Hub can be reached, asked once in about a second before anything is loaded: offline,
huggingface_hub would retry each file for half a minute (a line a retry) before the one line a user needs. Where the
Hub does not answer, `offline_unless_reachable` sets HF_HUB_OFFLINE, the libraries' own offline mode: what is cached
loads, and what is not fails at once. Standard library only: the console script (`hf_vanilla_cli`) and the recipes
(`recipes/settings_first.py`) read it before torch, transformers or huggingface_hub are imported, which read
HF_HUB_OFFLINE when they are."""

import os
import socket
import urllib.parse
import urllib.request
from pathlib import Path

# How long the one try waits for the Hub (or the proxy in between) to accept a connection.
REACH_SECONDS = 1.0
# The environment variables by which a user has decided on the Hub already (any value: theirs stands).
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
# What a user without the Hub can give instead of a Hub corpus, for each task's recipe.
TRANSLATION_OFFLINE = (
    "--dataset bible (the offline demo corpus), a folder of train/valid/test.{en,de} files or a JSONL file"
)
SUMMARIES_OFFLINE = (
    "--dataset with a folder in AESLC's layout or a JSONL, CSV or parquet file (--text-column, --summary-column)"
)


def hub_endpoint() -> str:
    """The Hub's address: HF_ENDPOINT, else huggingface.co (as huggingface_hub reads it)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_reachable(timeout: float = REACH_SECONDS) -> bool:
    """Whether a connection to the Hub (through the HTTPS proxy the environment names for it, if any) opens within
    `timeout` seconds: one try, no request sent. A name that does not resolve, a refused connection and no answer
    all mean no."""
    address = urllib.parse.urlsplit(hub_endpoint())
    host, port = address.hostname or "huggingface.co", address.port or (443 if address.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(address.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = proxied.hostname or host, proxied.port or 80
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:  # socket.gaierror (no such name), ConnectionRefusedError, TimeoutError, no route
        return False
    return True


def offline_unless_reachable(hub_names: list[str]) -> bool:
    """When the run reads or writes `hub_names` (Hub ids: not paths here, `model_paths.is_local_path`), the user has
    not set HF_HUB_OFFLINE, and the Hub does not answer one try: sets HF_HUB_OFFLINE=1 for this process and returns
    True. Call it before huggingface_hub is imported."""
    if not hub_names or any(variable in os.environ for variable in OFFLINE_VARIABLES) or hub_reachable():
        return False
    os.environ["HF_HUB_OFFLINE"] = "1"
    return True


def hf_home() -> str:
    """HF_HOME, else $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface (as huggingface_hub reads it)."""
    return os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))


def hub_cache() -> Path:
    """The folder huggingface_hub caches downloads in: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, else HF_HOME/hub (HF_HOME
    defaulting to $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface)."""
    folder = os.environ.get("HF_HUB_CACHE", os.environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(hf_home(), "hub")))
    return Path(os.path.expandvars(os.path.expanduser(folder)))


def cached_model(repo_id: str) -> bool:
    """Whether the Hub cache holds a downloaded snapshot of the model `repo_id` (its `models--OWNER--NAME` folder)."""
    snapshots = hub_cache() / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def datasets_cache() -> Path:
    """The folder datasets keeps its tables in: HF_DATASETS_CACHE, else HF_HOME/datasets."""
    folder = os.environ.get("HF_DATASETS_CACHE", os.path.join(hf_home(), "datasets"))
    return Path(os.path.expandvars(os.path.expanduser(folder)))


def cached_dataset(name: str) -> bool:
    """Whether anything of the Hub dataset `name` (a repo id, or a short name such as `aeslc` for its repo
    `OWNER/aeslc`) may be cached: its files in the Hub cache (`datasets--OWNER--NAME`) or its tables in datasets'
    own cache (`NAME`, `OWNER___NAME`). Lenient: only a cache without a trace of it is told no."""
    short = name.split("/")[-1]
    traces = {f"datasets--{name.replace('/', '--')}", name, short}
    for cache in (hub_cache(), datasets_cache()):
        if cache.is_dir() and any(
            entry.name in traces or entry.name.endswith((f"--{short}", f"___{short}")) for entry in cache.iterdir()
        ):
            return True
    return False


def unreachable_line(name: str, advice: str) -> str:
    """The one line for the Hub corpus `name` out of reach and not cached, with what to give instead, `advice`."""
    return (
        f"--dataset {name}: the Hugging Face Hub could not be reached and no copy of it is cached; offline, give "
        f"{advice}"
    )


def offline() -> bool:
    """Whether the libraries run offline (HF_HUB_OFFLINE, or transformers' TRANSFORMERS_OFFLINE, true)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in ("1", "ON", "YES", "TRUE")


def offline_model_problem(repo_id: str) -> str | None:
    """The one line for the Hub model `repo_id` while the libraries run offline and the cache holds no copy of it,
    or None."""
    if not offline() or cached_model(repo_id):
        return None
    return f"no model at {repo_id}: the Hugging Face Hub is out of reach (offline) and no copy of it is cached"
