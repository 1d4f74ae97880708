"""The Gradio demo (`hf_vanilla.app`): its tabs, answers equal to `generate()`'s, one-message errors after which the
app keeps serving, two users at once, the tree drawing, the Space folder; and (slow) the page itself in headless
Chromium, which types, clicks and reads the answers as a user would, saving a screenshot of each tab.

The browser tests need Debian's `chromium` and `pip install playwright` (never `playwright install`: the browser is
the system's), as `.ci/run` installs them; without them they skip, naming what is missing."""

import importlib.metadata
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import SpaceCard

from hf_vanilla.batch_decoding import generate_texts, load_for_decoding, parse_texts
from hf_vanilla.decoding_settings import APP_INPUT_TOKENS, settings_for
from hf_vanilla.hub import space_requirements
from hf_vanilla.parsing import parse_tree
from hf_vanilla.parsing.drawing import tree_svg
from hf_vanilla_cli import main as cli_main

from reversal import reversal_tokenizer, reversed_text
from runs import tiny_model

gr = pytest.importorskip("gradio", reason="the demo app needs gradio: pip install 'hf-vanilla[app]'")
app = pytest.importorskip("hf_vanilla.app")

CHROMIUM = Path(os.environ.get("HF_VANILLA_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("HF_VANILLA_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))
# Sentences of the reversal model's language (letters a-x): candidates of 6 and of 4 symbols for `sentences`.
SENTENCES = (
    ["a b c d e f", "g h i j k l", "m n o p q r", "s t u v w x"],
    ["q r s t", "e f g h", "u v w x", "i j k l"],
)
WORDS = "The cat sat on the mat ( really ) ."
# The summarize endpoint's parameters after the document, in their order (docs/app.md's table).
SUMMARY_PARAMETERS = (
    "num_beams",
    "length_penalty",
    "no_repeat_ngram_size",
    "min_length",
    "max_length",
    "no_stutter_span_size",
)


def summary_settings(*values) -> dict:
    """Values of the summarize endpoint's settings, in its order, by their parameter names."""
    return dict(zip(SUMMARY_PARAMETERS, values))


def sentences(model, settings: dict) -> dict[str, str]:
    """Two sentences (of 6 and of 4 symbols) that `model` is checked to reverse with the demo's `settings`
    (`reversal.reversed_text`), each with its reversal: which 5% a model trained to 95% gets wrong depends on the
    machine's rounding, so no fixed sentence is one it reverses everywhere."""
    chosen = [reversed_text(model, candidates, settings) for candidates in SENTENCES]
    return {source: " ".join(source.split()[::-1]) for source in chosen}


# --- the tree drawing -----------------------------------------------------------------------------------------------


def _svg_texts(svg: str, kind: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg)
    return [e for e in root.iter("{http://www.w3.org/2000/svg}text") if e.get("class") == kind]


def test_tree_svg_draws_each_word_in_order_under_its_constituents():
    tree = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN <mat>)))) (. .))"
    svg = tree_svg(tree)
    words, labels = _svg_texts(svg, "word"), _svg_texts(svg, "label")
    assert [w.text for w in words] == parse_tree(tree).words()  # "<mat>" escaped and read back
    assert [w.text for w in labels] == [node.label for event, node in parse_tree(tree).walk() if event != "close"]
    assert len({w.get("y") for w in words}) == 1  # one row of words
    x = [float(w.get("x")) for w in words]
    assert x == sorted(x) and len(set(x)) == len(x)
    by_label = {label.text: label for label in labels}
    assert float(by_label["S"].get("y")) < float(by_label["VP"].get("y")) < float(by_label["PP"].get("y"))
    assert x[2] < float(by_label["VP"].get("x")) < x[6]  # VP centred over sat ... mat
    branches = ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}line")
    assert len(list(branches)) == len(labels) - 1 + len(words)  # one to each node but the root, one to each word


def test_tree_svg_draws_a_deep_tree_without_recursion():
    depth = 3000
    svg = tree_svg("(A " * depth + "(X w)" + ")" * depth)
    assert [w.text for w in _svg_texts(svg, "word")] == ["w"] and len(_svg_texts(svg, "label")) == depth + 1


# --- the app's functions, without a browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parser_folder(parse_run) -> Path:
    return parse_run[0] / "final"


def test_tabs_follow_each_models_task(reversal_folder, parser_folder, tmp_path):
    demo = app.build_app([str(reversal_folder), str(parser_folder), str(reversal_folder)])
    tabs = [block for block in demo.blocks.values() if isinstance(block, gr.Tab)]
    assert [tab.label for tab in tabs] == [f"Translate: {reversal_folder}", "Parse", f"Translate: {reversal_folder}"]
    assert [tab.elem_id for tab in tabs] == ["translation-0-tab", "parsing-0-tab", "translation-1-tab"]
    with pytest.raises(app.ModelLoadError, match="no model at .* \\(no such folder\\)"):
        app.build_app([str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit, match="hf-vanilla: no model at"):
        cli_main(["app", str(tmp_path / "nowhere")])


def test_translate_answers_as_generate_does_with_the_chosen_settings(reversal_folder, reversal_model, monkeypatch):
    model = app.DemoModel.read(str(reversal_folder))
    assert model.decoding == {"num_beams": 4, "length_penalty": 0.6}  # the sliders start at the model's decoding
    passed = []

    def recording(*args, **kwargs):
        passed.append({k: kwargs[k] for k in ("num_beams", "length_penalty")})
        return generate_texts(*args, **kwargs)

    monkeypatch.setattr(app, "generate_texts", recording)
    run = app.translate(model, APP_INPUT_TOKENS)
    settings = {"num_beams": 3, "length_penalty": 1.5}
    reversals = sentences(reversal_model, settings)
    for source in reversals:
        translation, image, maps = run(source, 3, 1.5, 0, 0, progress=lambda *a, **k: None)
        expected = generate_texts(reversal_model, reversal_tokenizer(), [source], progress=False, **settings)
        assert [translation] == expected == [reversals[source]]
        assert maps.source_tokens == source.split() + ["</s>"]
        assert maps.decoder_tokens == ["<s>"] + translation.split()
        pixels = np.asarray(image.convert("L"), dtype=float)
        assert pixels.std() > 10  # a heatmap, not a blank picture
    assert passed == [{"num_beams": 3, "length_penalty": 1.5}] * len(reversals)
    # Another layer and head: another picture, from the same maps, without decoding again.
    assert np.asarray(app._png(maps, 2, 3)).tolist() != np.asarray(image).tolist()
    with pytest.raises(ValueError, match="out of range"):
        app._png(maps, 3, 1)


def test_bad_requests_are_one_message_and_the_next_request_works(reversal_folder, reversal_model, tmp_path):
    (tmp_path / "weightless").mkdir()
    shutil.copy(reversal_folder / "config.json", tmp_path / "weightless" / "config.json")
    run = app.translate(app.DemoModel.read(str(reversal_folder)), max_input_tokens=8)
    quiet = {"progress": lambda *a, **k: None}
    settings = {"num_beams": 1, "length_penalty": 0.6}
    served = generate_texts(reversal_model, reversal_tokenizer(), ["a b c"], progress=False, **settings)[0]
    for text, message in [
        ("", "The input is empty: type a sentence to translate first."),
        (" \n\t ", "The input is empty"),
        ("a b c d e f g h i", "The input is 10 tokens long; this demo takes at most 8. Shorten it."),
    ]:
        with pytest.raises(gr.Error) as raised:
            run(text, 1, 0.6, 0, 0, **quiet)
        assert raised.value.message.startswith(message) and "\n" not in raised.value.message
        assert run("a b c", 1, 0.6, 0, 0, **quiet)[0] == served  # still serving, the model's own answer
    broken = app.translate(app.DemoModel.read(str(tmp_path / "weightless")), 8)
    for _ in range(2):  # a failed load is tried again on the next request, and fails the same way
        with pytest.raises(gr.Error) as raised:
            broken("a b", 1, 0.6, 0, 0, **quiet)
        assert raised.value.message.startswith(
            f"The model could not be loaded: cannot load model '{tmp_path}/weightless'"
        )


def test_parse_gives_the_tree_the_parse_command_gives_and_draws_it(parser_folder):
    model = app.DemoModel.read(str(parser_folder))
    saved = json.loads((parser_folder / "generation_config.json").read_text())
    assert model.decoding == {"num_beams": saved["num_beams"], "length_penalty": saved["length_penalty"]}
    network, tokenizer = load_for_decoding(str(parser_folder))
    run = app.parse(model, APP_INPUT_TOKENS)
    for grammar, beams in ((True, 2), (False, 1)):  # free decoding runs to its length limit: greedy is enough
        tree, svg, note = run(WORDS, beams, 0.4, grammar, progress=lambda *a, **k: None)
        assert [tree] == parse_texts(
            network,
            tokenizer,
            [WORDS.replace("(", "-LRB-").replace(")", "-RRB-")],
            grammar,
            progress=False,
            num_beams=beams,
            length_penalty=0.4,
        )
        assert parse_tree(tree).words() == "The cat sat on the mat -LRB- really -RRB- .".split()
        assert [w.text for w in _svg_texts(svg, "word")] == parse_tree(tree).words()
        assert ("was **on:" if grammar else "was **off:") in note
    with pytest.raises(gr.Error, match="The input is empty: type the words of a sentence first."):
        run("   ", 2, 1.0, True, progress=lambda *a, **k: None)


def test_a_summarizer_gets_a_summarize_tab(summarization_folder, reversal_folder):
    demo = app.build_app([str(summarization_folder), str(reversal_folder)])
    tabs = [block for block in demo.blocks.values() if isinstance(block, gr.Tab)]
    assert [(tab.label, tab.elem_id) for tab in tabs] == [
        ("Summarize", "summarization-0-tab"),
        ("Translate", "translation-0-tab"),
    ]
    shown = {block.elem_id: block.visible for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    assert shown["summarization-0-copied"] and shown["summarization-0-p-gen"]  # a pointer-generator: p_gen shown
    assert shown["summarization-0-sources"]


def test_summarize_answers_as_generate_does_and_shows_p_gen(summarization_folder, summarization_model, monkeypatch):
    """The summary is `generate_texts`' with the chosen settings (the sliders start at the model's summarization
    row); each summary token, </s> included, is shaded by 1 - p_gen of the model's forward pass over the pair."""
    import torch

    model = app.DemoModel.read(str(summarization_folder))
    row = {
        "num_beams": 4,
        "length_penalty": 1.0,
        "no_repeat_ngram_size": 3,
        "min_new_tokens": 1,
        "max_new_tokens": 64,
        "no_stutter_span_size": 4,
    }  # in the order of the endpoint's parameters
    assert model.decoding == row
    passed = []

    def recording(*args, **kwargs):
        passed.append({k: kwargs[k] for k in row})
        return generate_texts(*args, **kwargs)

    monkeypatch.setattr(app, "generate_texts", recording)
    run = app.summarize(model, APP_INPUT_TOKENS)
    tokenizer, quiet = reversal_tokenizer(), {"progress": lambda *a, **k: None}
    # A document of 6 symbols the model reverses with the second settings but for their max length (checked:
    # `reversed_text`), so that its summary is cut.
    uncut = dict(zip(row, (2, 0.5, 0, 2, 64, 0)))
    six = reversed_text(summarization_model, ["x w v u t s", "a b c d e f", "g h i j k l", "m n o p q r"], uncut)
    for document, settings in (("a b c a b c d", (4, 1.0, 3, 1, 64, 4)), (six, (2, 0.5, 0, 2, 4, 0))):
        summary, shaded, sources, image, note = run(document, **summary_settings(*settings), **quiet)
        flags = dict(zip(row, settings))
        assert [summary] == generate_texts(summarization_model, tokenizer, [document], progress=False, **flags)
        assert passed[-1] == flags and note == ""
        tokens = [token for token, score in shaded if score is not None]
        assert tokens == [*summary.split(), "</s>"] and [text for text, score in shaded if score is None] == [" "] * (
            len(tokens) - 1
        )
        source = tokenizer(document, return_tensors="pt").input_ids
        decoder = torch.tensor([[1] + tokenizer(summary).input_ids[:-1]])
        with torch.no_grad():
            p_gen = summarization_model(input_ids=source, decoder_input_ids=decoder, output_attentions=True).p_gen[0]
        assert [score for _, score in shaded if score is not None] == [round(1 - p, 3) for p in p_gen.tolist()]
        # The document's tokens shaded by how much was copied from each: sum_t (1 - p_gen_t) a'_t, a'_t the last
        # layer's cross-attention (mean of heads) renormalized over the tokens that are no special token (</s> is
        # never copied), relative to the largest.
        with torch.no_grad():
            attention = (
                summarization_model(input_ids=source, decoder_input_ids=decoder, output_attentions=True)
                .cross_attentions[-1][0]
                .mean(0)
            )
        attention = attention * (source[0] > 2)
        copied = (1 - p_gen) @ (attention / attention.sum(-1, keepdim=True))
        assert [token for token, score in sources if score is not None] == [*document.split(), "</s>"]
        assert [score for _, score in sources if score is not None] == [
            round(w, 3) for w in (copied / copied.max()).tolist()
        ]
        assert np.asarray(image.convert("L"), dtype=float).std() > 10  # bars, not a blank picture
    assert len(summary.split()) == 4  # max length 4 cut the reversal of 6 symbols

    with pytest.raises(gr.Error, match="The input is empty: type a document to summarize first."):
        run(" ", **summary_settings(4, 1.0, 3, 1, 64), **quiet)
    with pytest.raises(
        gr.Error, match=r"No summary fits: summaries of at least 9 and at most 8 tokens. Lower the minimum length."
    ):
        run("a b c", **summary_settings(4, 1.0, 3, 9, 8), **quiet)
    served = generate_texts(
        summarization_model, tokenizer, ["a b c"], progress=False, **dict(zip(row, (4, 1.0, 3, 1, 64, 0)))
    )
    assert run("a b c", **summary_settings(4, 1.0, 3, 1, 64, 0), **quiet)[0] == served[0]  # still serving


def test_summarize_reads_a_long_document_up_to_the_models_limit_and_says_so(
    summarization_folder, summarization_model, tmp_path
):
    from transformers import AutoTokenizer

    folder = tmp_path / "recorded"
    shutil.copytree(summarization_folder, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.model_max_length = 5  # the limit the model was trained with, as the summarization recipe records it
    tokenizer.save_pretrained(folder)
    run = app.summarize(app.DemoModel.read(str(folder)), APP_INPUT_TOKENS)
    quiet = {"progress": lambda *a, **k: None}
    summary, shaded, _, _, note = run("a b c d e f g h", **summary_settings(4, 1.0, 3, 1, 64), **quiet)
    settings = dict(num_beams=4, length_penalty=1.0, no_repeat_ngram_size=3, min_new_tokens=1, max_new_tokens=64)
    first = generate_texts(summarization_model, tokenizer, ["a b c d"], progress=False, **settings)  # 4 words + </s>
    assert [summary] == first and note == "The model reads at most 5 tokens: the document's last 4 were left out."
    assert len([score for _, score in shaded if score is not None]) == len(summary.split()) + 1  # </s> too


def test_a_summarizer_without_the_copy_mechanism_shows_no_p_gen(reversal_folder, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(reversal_folder, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "task": "summarization", "decoding": "summarization"}))
    (folder / "generation_config.json").unlink()  # transformers' defaults: no summary bounds
    model = app.DemoModel.read(str(folder))
    demo = app.build_app([str(folder)])
    shown = {block.elem_id: block.visible for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    assert not shown["summarization-0-copied"] and not shown["summarization-0-p-gen"]
    assert not shown["summarization-0-sources"]
    summary, shaded, sources, image, note = app.summarize(model, 50)(
        "a b c", **summary_settings(2, 1.0, 0, 1, 10), progress=lambda *a, **k: None
    )
    network, tokenizer = load_for_decoding(str(folder))
    settings = dict(num_beams=2, length_penalty=1.0, no_repeat_ngram_size=0, min_new_tokens=1, max_new_tokens=10)
    assert [summary] == generate_texts(network, tokenizer, ["a b c"], progress=False, **settings)
    assert shaded is None and sources is None and image is None and note == ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_port_in_use_is_one_line_naming_the_flag(reversal_folder):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exit_:
            cli_main(["app", str(reversal_folder), "--port", str(port)])
    assert str(exit_.value.code) == f"hf-vanilla: port {port} is in use: choose another --port"


def _untrained_folders(root: Path) -> list[str]:
    """Folders of an untrained tiny translation model, parser and summarizer (the app reads only their configs until
    a request comes)."""
    folders = []
    for task in ("translation", "parsing", "summarization"):
        tiny_model(decoding=task).save_pretrained(root / task)
        folders.append(str(root / task))
    return folders


def test_the_app_command_prints_its_address_as_soon_as_it_serves(tmp_path):
    """`hf-vanilla app` as a user starts it: the line naming its address comes while the server answers there (it
    came after shutdown before: Gradio's launch() blocked first), and Ctrl-C stops it."""
    import queue
    import signal

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "hf_vanilla_cli", "app", *_untrained_folders(tmp_path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # a SIGABRT prints every thread's stack
        # Ctrl-C as a terminal delivers it: a test run started in the background (`cmd &` in a script) ignores
        # SIGINT, and a child inherits that, so the server would never see the SIGINT below.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    url, seen = f"http://127.0.0.1:{port}/", []
    try:
        while not seen or not seen[-1].startswith("serving the demo on"):
            seen.append(lines.get(timeout=180))
        assert seen[-1] == f"serving the demo on {url} (--share: a public link too); Ctrl-C stops it\n", seen
        assert _answers(url) and server.poll() is None  # still serving, and answering, once it has said so
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.send_signal(signal.SIGABRT)
            server.wait(timeout=30)
            time.sleep(1)  # the reader thread's last lines
            printed = "".join(lines.get() for _ in range(lines.qsize()))
            pytest.fail(f"still running 60 s after Ctrl-C; its output since it served, stacks last:\n{printed}")
        finally:
            server.kill()  # none left serving, whatever failed (nothing to do once it has exited)
    assert server.returncode is not None and not _answers(url)


def test_the_docs_list_the_apps_api_endpoints(tmp_path):
    """docs/app.md's table of API endpoints is the app's own (`get_api_info`, what gradio_client reads): every named
    endpoint, its parameters' names and types in order, its answers' labels in order, and no other."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "app.md").read_text()
    table = page.split("<!-- api-endpoints -->")[1].split("<!-- /api-endpoints -->")[0]
    documented = {}
    for row in table.strip().splitlines()[2:]:
        endpoint, parameters, returns = (cell.strip() for cell in row.strip("|").split("|"))
        pairs = [parameter.split(":") for parameter in parameters.split(", ")]
        documented[endpoint.strip("`").replace("_N", "_0")] = (
            [(name.strip().strip("`"), kind.strip()) for name, kind in pairs],
            returns.split("; "),
        )
    info = app.build_app(_untrained_folders(tmp_path)).get_api_info()
    served = {
        name: (
            [(p["parameter_name"], p["python_type"]["type"]) for p in endpoint["parameters"]],
            [r["label"] for r in endpoint["returns"]],
        )
        for name, endpoint in info["named_endpoints"].items()
    }
    assert documented == served and not info["unnamed_endpoints"]


def test_two_users_at_once_each_get_their_own_answer(reversal_folder, reversal_model):
    from contextlib import redirect_stdout

    from gradio_client import Client

    port = _free_port()
    with redirect_stdout(io.StringIO()) as printed:
        demo = app.launch([str(reversal_folder)], "127.0.0.1", port, prevent_thread_lock=True)
    started = printed.getvalue()
    assert f"serving the demo on http://127.0.0.1:{port}/" in started and "--share" in started
    assert "launch()" not in started and "share=True" not in started
    try:
        url = f"http://127.0.0.1:{port}/"
        reversals = sentences(reversal_model, {"num_beams": 4, "length_penalty": 0.6})
        users = [Client(url, verbose=False) for _ in reversals]
        jobs = [user.submit(source, 4, 0.6, 0, 0, api_name="/translation_0") for user, source in zip(users, reversals)]
        assert [job.result(timeout=120)[0] for job in jobs] == list(reversals.values())
    finally:
        demo.close()


def test_the_api_names_every_output_takes_what_it_advertises_and_clears_an_old_answer(
    reversal_folder, summarization_folder, reversal_model
):
    """gradio_client's view of the endpoints: every output has its label as name (no `value_35`), layer and head are
    numbers, and a call with the advertised types answers; in the page, a request clears the previous answer first,
    so that an error leaves none of it."""
    from gradio_client import Client

    port = _free_port()
    demo = app.launch([str(reversal_folder), str(summarization_folder)], "127.0.0.1", port, prevent_thread_lock=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        assert set(api) == {"/translation_0", "/summarization_0"}
        for endpoint in api.values():
            assert all(not r["label"].startswith("value_") for r in endpoint["returns"]), endpoint["returns"]
        translate = {p["parameter_name"]: p["python_type"]["type"] for p in api["/translation_0"]["parameters"]}
        assert translate["layer"] == translate["head"] == "float"
        answer = client.predict("a b c", 2, 0.6, 2, 1, api_name="/translation_0")
        settings = {"num_beams": 2, "length_penalty": 0.6}
        assert [answer[0]] == generate_texts(
            reversal_model, reversal_tokenizer(), ["a b c"], progress=False, **settings
        )
        labels = [r["label"] for r in api["/summarization_0"]["returns"]]
        assert labels[0] == "Summary" and labels[-1] == "Note"
    finally:
        demo.close()
    steps = demo.config["dependencies"]
    clearing = [d for d in steps if d["api_visibility"] == "private" and not d["queue"] and not d["inputs"]]
    assert len(clearing) >= 2  # one a tab, before its work (which is what the API calls)


def test_a_summarizer_is_answered_at_its_own_settings_beyond_the_usual_ranges(
    summarization_folder, summarization_model, tmp_path
):
    """The sliders start at the model's generation config and Gradio refuses a value outside a slider's range, so each
    range must hold the model's value: the AESLC demo decodes with length penalty 3.0, where the slider once ended at
    2.0 and every request at the model's settings failed ("Value 3.0 is greater than maximum value 2.0")."""
    from gradio_client import Client

    folder = tmp_path / "summarizer"
    shutil.copytree(summarization_folder, folder)
    own = {"num_beams": 40, "length_penalty": 3.0, "no_repeat_ngram_size": 8, "no_stutter_span_size": 9}
    generation = json.loads((folder / "generation_config.json").read_text())
    (folder / "generation_config.json").write_text(json.dumps({**generation, **own}))
    port = _free_port()
    demo = app.launch([str(folder)], "127.0.0.1", port, prevent_thread_lock=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/summarization_0"]
        defaults = {p["parameter_name"]: p["parameter_default"] for p in api["parameters"]}
        assert {name: defaults[name] for name in own} == own
        summary = client.predict("a b c d", api_name="/summarization_0")[0]  # every setting at its default
    finally:
        demo.close()
    flags = {**own, "min_new_tokens": 1, "max_new_tokens": 64}
    assert [summary] == generate_texts(summarization_model, reversal_tokenizer(), ["a b c d"], progress=False, **flags)


# --- the Space ------------------------------------------------------------------------------------------------------


def test_space_folder_runs_the_app_on_the_pinned_versions(parse_run, tmp_path, capsys):
    run_dir, _ = parse_run
    cli_main(
        ["push", str(run_dir), "someone/parser", "--space", "someone/demo", "--space-model", "someone/translator"]
        + ["--build-dir", str(tmp_path / "hub"), "--space-dir", str(tmp_path / "space"), "--dry-run"]
    )
    assert capsys.readouterr().out == f"built {tmp_path / 'hub'} and {tmp_path / 'space'}; not uploaded (--dry-run)\n"
    space = tmp_path / "space"
    assert "launch(['someone/parser', 'someone/translator'])" in (space / "app.py").read_text()
    card = SpaceCard.load(space / "README.md").data
    assert (card.sdk, card.app_file, card.models) == ("gradio", "app.py", ["someone/parser", "someone/translator"])
    assert card.sdk_version == gr.__version__
    pins = dict(line.split("==") for line in (space / "requirements.txt").read_text().splitlines())
    assert pins == {name: version for name, version in (pin.split("==") for pin in space_requirements())}
    for name in ("torch", "transformers", "gradio", "matplotlib", "huggingface_hub"):
        assert pins[name] == importlib.metadata.version(name).split("+")[0]
    # The Space runs `python app.py` in its folder: hf_vanilla is imported from the copy beside it.
    found = subprocess.run(
        [sys.executable, "-c", "import hf_vanilla.app, hf_vanilla.hub; print(hf_vanilla.__file__)"],
        cwd=space,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == space / "hf_vanilla" / "__init__.py"


# --- in a real browser ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, driven by Playwright) with a fresh profile, or a skip naming what is missing."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the browser tests need playwright: pip install playwright"
    )
    if not CHROMIUM.is_file():
        pytest.skip(f"the browser tests need Chromium at {CHROMIUM}: apt-get install chromium")
    profile = ARTIFACTS / "chromium-profile"
    shutil.rmtree(profile, ignore_errors=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=flags, viewport={"width": 1280, "height": 1000}
        )
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def served(reversal_folder, parser_folder, summarization_folder):
    """`hf-vanilla app` serving the reversal model, the parser and the summarizer on 127.0.0.1, as a user starts it:
    its URL."""
    port = _free_port()
    models = [str(reversal_folder), str(parser_folder), str(summarization_folder)]
    server = subprocess.Popen(
        [sys.executable, "-m", "hf_vanilla_cli", "app", *models, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(server.stdout), daemon=True).start()
    url, started = f"http://127.0.0.1:{port}/", time.monotonic()
    while not _answers(url):
        if server.poll() is not None or time.monotonic() - started > 600:
            server.kill()
            pytest.fail(f"the app did not start: {''.join(lines)}")
        time.sleep(1)
    yield url
    server.terminate()
    server.wait(timeout=60)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _page(browser, url: str):
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.goto(url)
    return page


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"app-{name}.png", full_page=True)


def _answer(page, element: str, previous: str = "") -> str:
    """The text of output box `element` once a request has filled it with something other than `previous`."""
    box = page.locator(f"#{element} textarea")
    page.wait_for_function(
        "([box, previous]) => { const e = document.querySelector(box); return e && e.value && e.value !== previous; }",
        arg=[f"#{element} textarea", previous],
    )
    return box.input_value()


@pytest.mark.slow
def test_translate_tab_in_a_browser(browser, served, reversal_model):
    from PIL import Image

    page = _page(browser, served)
    previous = ""
    for source, expected in sentences(reversal_model, {}).items():  # the model's own decoding, the page's default
        page.locator("#translation-0-input textarea").fill(source)
        page.locator("#translation-0-button").click()
        answer = _answer(page, "translation-0-output", previous)
        assert [answer] == generate_texts(reversal_model, reversal_tokenizer(), [source], progress=False) == [expected]
        previous = answer
    heatmap = page.locator("#translation-0-heatmap img")
    heatmap.wait_for(state="visible")
    pixels = np.asarray(Image.open(io.BytesIO(heatmap.screenshot())).convert("L"), dtype=float)
    assert pixels.shape[0] > 100 and pixels.std() > 10  # present and not blank
    _shot(page, "translate")
    page.close()


@pytest.mark.slow
def test_parse_tab_in_a_browser(browser, served, parser_folder):
    page = _page(browser, served)
    page.get_by_role("tab", name="Parse").click()
    page.locator("#parsing-0-input textarea").fill(WORDS)
    beams = page.locator("#parsing-0-beams input[type=number]")
    beams.fill("2")
    beams.press("Enter")
    page.locator("#parsing-0-button").click()
    tree = _answer(page, "parsing-0-output")
    network, tokenizer = load_for_decoding(str(parser_folder))
    words = WORDS.replace("(", "-LRB-").replace(")", "-RRB-")
    assert [tree] == parse_texts(network, tokenizer, [words], progress=False, num_beams=2)
    assert parse_tree(tree).words() == words.split()
    drawn = page.locator("#parsing-0-drawing svg text.word")
    drawn.first.wait_for()
    assert drawn.evaluate_all("texts => texts.map(t => t.textContent)") == words.split()
    assert "Grammar-constrained decoding was on" in page.locator("#parsing-0-note").inner_text()
    _shot(page, "parse")
    page.close()


@pytest.mark.slow
def test_an_error_shows_one_message_and_the_next_request_works_in_a_browser(browser, served, reversal_model):
    page = _page(browser, served)
    page.locator("#translation-0-button").click()  # nothing typed
    message = page.get_by_text("The input is empty: type a sentence to translate first.")
    message.wait_for()
    _shot(page, "error")
    page.locator("#translation-0-input textarea").fill("a b c")
    page.locator("#translation-0-button").click()
    assert [_answer(page, "translation-0-output")] == generate_texts(
        reversal_model, reversal_tokenizer(), ["a b c"], progress=False
    )
    page.close()


@pytest.mark.slow
def test_summarize_tab_in_a_browser(browser, served, summarization_model):
    page = _page(browser, served)
    page.get_by_role("tab", name="Summarize").click()
    page.locator("#summarization-0-input textarea").fill("a b c a b c d")
    page.locator("#summarization-0-button").click()
    summary = _answer(page, "summarization-0-output")
    assert [summary] == generate_texts(summarization_model, reversal_tokenizer(), ["a b c a b c d"], progress=False)
    bars = page.locator("#summarization-0-p-gen img")
    bars.wait_for(state="visible")
    shown = page.locator("#summarization-0-copied").inner_text()
    assert all(token in shown for token in summary.split())  # the shaded summary tokens
    _shot(page, "summarize")
    page.close()


def test_the_apps_defaults_for_unset_settings_are_transformers_own():
    """The app shows transformers' defaults where a saved generation config leaves a setting unset; it keeps its own
    copy of them (the package calls no private member of transformers), which this compares with transformers'."""
    from transformers import GenerationConfig

    defaults = GenerationConfig._get_default_generation_params()
    assert app.TRANSFORMERS_DEFAULTS == {name: defaults[name] for name in app.TRANSFORMERS_DEFAULTS}
    shown = {setting.name for task in ("translation", "parsing", "summarization") for setting in settings_for(task)}
    assert {name for name in shown if name in defaults} == set(app.TRANSFORMERS_DEFAULTS)
