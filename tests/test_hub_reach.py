"""The Hub asked once, in about a second, before anything loads: a real connection to a listening socket (the Hub
answers), to a closed port (it does not: HF_HUB_OFFLINE is set for the process), and the caches read as
huggingface_hub and datasets lay them out."""

import socket
import time

import pytest

from hf_vanilla import hub_reach


@pytest.fixture
def no_hub_settings(monkeypatch):
    """No offline setting nor proxy in the environment, each restored after the test (HF_HUB_OFFLINE included, which
    `offline_unless_reachable` sets)."""
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(variable, "")  # recorded as it was, then removed
        monkeypatch.delenv(variable)


@pytest.fixture
def closed_endpoint(monkeypatch, no_hub_settings) -> str:
    """HF_ENDPOINT at a local port nothing listens on: every connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return endpoint


def test_a_hub_that_accepts_a_connection_is_reachable(monkeypatch, no_hub_settings):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub_reach.hub_reachable()
        assert not hub_reach.offline_unless_reachable(["Helsinki-NLP/opus-mt-en-de"])
    assert not hub_reach.offline()


def test_a_hub_out_of_reach_turns_the_libraries_offline_after_one_short_try(closed_endpoint, monkeypatch):
    started = time.monotonic()
    assert not hub_reach.hub_reachable()
    assert hub_reach.offline_unless_reachable(["wmt14"]) and hub_reach.offline()
    assert time.monotonic() - started < 2 * hub_reach.REACH_SECONDS
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert not hub_reach.offline_unless_reachable([])  # nothing read from the Hub: nothing asked
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the user's word stands
    assert not hub_reach.offline_unless_reachable(["wmt14"]) and not hub_reach.offline()


def test_the_caches_are_read_where_huggingface_hub_and_datasets_write_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_DATASETS_CACHE", raising=False)
    assert not hub_reach.cached_model("Helsinki-NLP/opus-mt-en-de") and not hub_reach.cached_dataset("wmt14")
    (tmp_path / "hub" / "models--Helsinki-NLP--opus-mt-en-de" / "snapshots" / "0123abc").mkdir(parents=True)
    (tmp_path / "hub" / "datasets--Yale-LILY--aeslc").mkdir(parents=True)
    (tmp_path / "datasets" / "wmt14").mkdir(parents=True)
    assert hub_reach.cached_model("Helsinki-NLP/opus-mt-en-de") and not hub_reach.cached_model("Helsinki-NLP/x")
    assert hub_reach.cached_dataset("wmt14") and hub_reach.cached_dataset("aeslc")  # the repo Yale-LILY/aeslc
    assert not hub_reach.cached_dataset("xsum")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_reach.offline_model_problem("Helsinki-NLP/x") == (
        "no model at Helsinki-NLP/x: the Hugging Face Hub is out of reach (offline) and no copy of it is cached"
    )
    assert hub_reach.offline_model_problem("Helsinki-NLP/opus-mt-en-de") is None
