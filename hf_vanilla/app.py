"""A Gradio demo of trained hf_vanilla models, a tab for each model's task, run on this machine with
`hf-vanilla app MODEL...` or as a Hugging Face Space (`hf-vanilla push ... --space SPACE_ID`):

- Translate: a translation with the beam size and length penalty chosen, and the cross-attention heatmap of the
  result (source tokens across, target tokens down), for any layer and head or their mean.
- Parse: the tree over the input words, bracketed and drawn (SVG drawn here), under the tree grammar or not.
- Summarize: a summary with the beam size, length penalty, no-repeat n-gram size and summary length bounds chosen;
  for a pointer-generator, which summary tokens were copied from the document: each token shaded by 1 - p_gen, and
  p_gen as bars.

A model's task is its `config.task` (`batch_decoding.model_task`: what it was trained for); `TASKS` maps each task
to its tab. Models are read (config only) when the app is built and loaded on their first request. Requests are
queued; a bad one (empty or over-long input, a model that cannot load) shows one message and the app keeps serving.
Needs the `app` extra: pip install 'hf-vanilla[app]'."""

import errno
import io
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Before Gradio is imported: no usage statistics or update checks are sent (the app also runs offline).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

APP_MISSING = "the demo app needs Gradio: pip install 'hf-vanilla[app]'"

try:
    import gradio as gr
except ImportError as error:
    raise ImportError(APP_MISSING) from error

from .attention_plots import attention_maps, attention_png, p_gen_figure, with_attention_weights  # noqa: E402
from .batch_decoding import (  # noqa: E402
    ModelLoadError,
    check_length_bounds,
    check_model_path,
    generate_texts,
    input_limit,
    load_for_decoding,
    model_task,
    one_line,
    parse_texts,
    ptb_words,
)
from .decoding_settings import APP_INPUT_TOKENS, SETTINGS, settings_for  # noqa: E402
from .errors import error_line  # noqa: E402
from .parsing.drawing import tree_svg  # noqa: E402

# The summarize endpoint's parameters after the document: the summarizer's decoding settings (`settings_for`, in
# their order), the summary's length bounds under the names the endpoint has always had.
SUMMARY_PARAMETERS = {
    setting.name: {"min_new_tokens": "min_length", "max_new_tokens": "max_length"}.get(setting.name, setting.name)
    for setting in settings_for("summarization")
}
# No fonts fetched from the internet: the page looks the same offline.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])


# The defaults transformers' `GenerationConfig` documents for the settings the app shows (a saved config may leave them
# unset: None), read from its docstring, not from a private member.
TRANSFORMERS_DEFAULTS = {"num_beams": 1, "length_penalty": 1.0, "no_repeat_ngram_size": 0}


@dataclass
class DemoModel:
    """A model of the demo: its name (a folder or a Hub id) and config, read when the app is built; the weights and
    tokenizer are loaded on the first request that needs them (once, whichever request comes first)."""

    name: str
    config: object
    decoding: dict  # the model's own value of each decoding setting its task offers (`settings_for`)
    _loaded: tuple | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def read(cls, name: str) -> "DemoModel":
        """The model's config; `ModelLoadError` when there is none to read."""
        from transformers import AutoConfig, GenerationConfig

        check_model_path(name)
        try:
            config = AutoConfig.from_pretrained(name)
        except (OSError, ValueError) as error:
            raise ModelLoadError(f"cannot load model {name!r}: {error_line(error)}") from None
        try:
            generation = GenerationConfig.from_pretrained(name)
        except OSError:  # no generation_config.json: transformers' defaults, as generate() would use
            generation = GenerationConfig()
        # transformers 5 leaves unset values None and generate() fills them from its documented defaults.
        defaults = TRANSFORMERS_DEFAULTS
        settings = settings_for(model_task(config))
        values = {setting.name: getattr(generation, setting.name, None) for setting in settings}
        return cls(name, config, {k: defaults.get(k) if value is None else value for k, value in values.items()})

    @property
    def task(self) -> str:
        return model_task(self.config)

    def load(self) -> tuple:
        """(model, tokenizer), loaded on the first call; `ModelLoadError` (and a new try next time) when it fails."""
        with self._lock:
            if self._loaded is None:
                model, tokenizer = load_for_decoding(self.name)
                self._loaded = with_attention_weights(model), tokenizer
            return self._loaded


def checked_input(text: str | None, tokenizer, max_input_tokens: int, what: str) -> str:
    """`text` as one line, or a `gr.Error` saying why it cannot be decoded (empty, or over `max_input_tokens`)."""
    text = one_line(text or "").strip()
    if not text:
        raise gr.Error(f"The input is empty: type {what} first.", print_exception=False)
    length = len(tokenizer(text)["input_ids"])
    if length > max_input_tokens:
        raise gr.Error(
            f"The input is {length} tokens long; this demo takes at most {max_input_tokens}. Shorten it.",
            print_exception=False,
        )
    return text


def _loaded(model: DemoModel) -> tuple:
    try:
        return model.load()
    except ModelLoadError as error:
        raise gr.Error(f"The model could not be loaded: {error}", print_exception=False) from None


def _png(maps, layer: float, head: float):
    """The cross-attention heatmap of `maps` (layer and head from 1; 0 for the mean) as an image, None without maps."""
    from PIL import Image

    if maps is None:
        return None
    return Image.open(io.BytesIO(attention_png(maps, "cross_attention", int(layer) or None, int(head) or None)))


def translate(model: DemoModel, max_input_tokens: int):
    """The Translate button's function: (text, beams, penalty, layer, head) -> (translation, heatmap, maps)."""

    def run(text, num_beams, length_penalty, layer, head, progress=gr.Progress()):  # noqa: B008  (Gradio reads it)
        progress(0.0, desc="loading the model")
        network, tokenizer = _loaded(model)
        source = checked_input(text, tokenizer, max_input_tokens, "a sentence to translate")
        progress(0.2, desc="translating")
        flags = {"num_beams": int(num_beams), "length_penalty": float(length_penalty)}
        (translation,) = generate_texts(network, tokenizer, [source], progress=False, **flags)
        progress(0.8, desc="reading the attention")
        maps = attention_maps(network, tokenizer, source, translation)
        return translation, _png(maps, layer, head), maps

    return run


def parse(model: DemoModel, max_input_tokens: int):
    """The Parse button's function: (words, beams, penalty, tree grammar) -> (bracketed tree, SVG drawing, note)."""

    def run(text, num_beams, length_penalty, tree_grammar, progress=gr.Progress()):  # noqa: B008  (Gradio reads it)
        progress(0.0, desc="loading the model")
        network, tokenizer = _loaded(model)
        sentence = checked_input(ptb_words(text or ""), tokenizer, max_input_tokens, "the words of a sentence")
        progress(0.2, desc="parsing")
        try:
            flags = {"num_beams": int(num_beams), "length_penalty": float(length_penalty)}
            (tree,) = parse_texts(network, tokenizer, [sentence], tree_grammar, progress=False, **flags)
        except ValueError as error:  # a tokenizer that cannot write brackets as single tokens
            raise gr.Error(f"{error} Untick the tree grammar to decode freely.", print_exception=False) from None
        how = "on: only well-formed trees over the input words were decoded" if tree_grammar else "off: decoded "
        how += "" if tree_grammar else "freely, as the paper did, and repaired into a tree over the input words"
        return tree, tree_svg(tree), f"Grammar-constrained decoding was **{how}**."

    return run


def _p_gen_png(maps):
    """The p_gen bars of `maps` (`p_gen_figure`) as an image."""
    from PIL import Image

    buffer = io.BytesIO()
    p_gen_figure(maps).savefig(buffer, dpi=100, format="png")
    return Image.open(io.BytesIO(buffer.getvalue()))


def copy_weights(maps) -> np.ndarray:
    """How much each source token was copied into the summary: sum over summary tokens t of (1 - p_gen_t) times the
    copy distribution a'_t that the model mixed (`outputs.copy_attention`)."""
    return (1.0 - maps.p_gen) @ maps.copy_attention


def _shaded(tokens: list[str], scores) -> list[tuple[str, float | None]]:
    """`tokens` as Gradio's highlighted text, each with its score (rounded to 3 decimals), a space between them."""
    shaded = []
    for token, score in zip(tokens, scores):
        shaded += [(token, round(float(score), 3)), (" ", None)]
    return shaded[:-1]


def summarize(model: DemoModel, max_input_tokens: int):
    """The Summarize button's function: (document, then the summarizer's decoding settings by the endpoint's names,
    `SUMMARY_PARAMETERS`; a setting not given is the model's own) -> (summary, its tokens shaded by their copy
    probability 1 - p_gen, the document's tokens shaded by how much they were copied (`copy_weights`), the p_gen
    bars, note); all but the summary and note are empty for a model without the copy mechanism. A document over the
    limit the model records (its tokenizer's model_max_length) is read up to it, as `hf-vanilla summarize` reads it,
    and the note says so."""

    def run(text, progress=gr.Progress(), **settings):  # noqa: B008  (Gradio reads it)
        unknown = sorted(set(settings) - set(SUMMARY_PARAMETERS.values()))
        if unknown:  # a caller's misspelt setting would otherwise be the model's own, silently
            raise TypeError(
                f"no summarize setting {', '.join(unknown)}; the settings: {', '.join(SUMMARY_PARAMETERS.values())}"
            )
        progress(0.0, desc="loading the model")
        network, tokenizer = _loaded(model)
        document = checked_input(text, tokenizer, max_input_tokens, "a document to summarize")
        flags = {
            name: SETTINGS[name].type(settings[parameter])
            for name, parameter in SUMMARY_PARAMETERS.items()
            if settings.get(parameter) is not None
        }
        try:
            check_length_bounds(network, flags.get("min_new_tokens"), flags.get("max_new_tokens"))
        except ValueError as error:
            raise gr.Error(f"No summary fits: {error}. Lower the minimum length.", print_exception=False) from None
        limit, _ = input_limit(tokenizer)
        length = len(tokenizer(document, verbose=False)["input_ids"])
        note = ""
        if limit is not None and length > limit:
            note = f"The model reads at most {limit} tokens: the document's last {length - limit} were left out."
        progress(0.2, desc="summarizing")
        (summary,) = generate_texts(network, tokenizer, [document], progress=False, max_source_tokens=limit, **flags)
        if not getattr(network.config, "pointer_generator", False):
            return summary, None, None, None, note
        progress(0.8, desc="reading p_gen")
        maps = attention_maps(network, tokenizer, document, summary, max_source_tokens=limit)
        copied = copy_weights(maps)  # shown relative to the most copied token
        sources = _shaded(maps.source_tokens, copied / max(float(copied.max()), 1e-12))
        copied_tokens = _shaded(maps.target_tokens, 1.0 - maps.p_gen.astype(np.float64))
        return summary, copied_tokens, sources, _p_gen_png(maps), note

    return run


def _setting_slider(low: float, high: float, value: float, label: str, elem_id: str, step: float = 1) -> "gr.Slider":
    """A slider starting at one of the model's own decoding settings (its generation config), from `low` to `high`
    widened to hold `value`: Gradio refuses a request whose value lies outside its slider's range."""
    return gr.Slider(min(low, value), max(high, value), value=value, step=step, label=label, elem_id=elem_id)


def least(name: str) -> float:
    """The bottom of a decoding setting's slider: its least value (`decoding_settings.SETTINGS`), 0 where it has
    none."""
    return SETTINGS[name].least or 0


def _decoding_controls(model: DemoModel, prefix: str) -> tuple:
    """Beam size and length penalty sliders starting at the model's own decoding."""
    beams, penalty = model.decoding["num_beams"], model.decoding["length_penalty"]
    num_beams = _setting_slider(least("num_beams"), 32, beams, "Beam size", f"{prefix}-beams")
    length_penalty = _setting_slider(
        least("length_penalty"), max(2.0, 2 * penalty), penalty, "Length penalty", f"{prefix}-penalty", 0.1
    )
    return num_beams, length_penalty


def _cleared(count: int) -> Callable[[], tuple]:
    """A function giving `count` empty outputs: a tab's answer is cleared when a request starts, so that an error
    never leaves the previous answer (or its note) on the page."""
    return lambda: (None,) * count


def _answer(
    triggers: list, work: Callable, inputs: list, outputs: list, prefix: str, keywords: dict | None = None
) -> None:
    """`work(inputs, **keywords) -> outputs` on `triggers`, the outputs cleared first; the API endpoint is `work`
    alone, named after the tab, its parameters `inputs` then `keywords` by name."""
    cleared = gr.on(triggers, _cleared(len(outputs)), None, outputs, queue=False, api_visibility="private")
    cleared.then(
        work, inputs, outputs, api_name=prefix.replace("-", "_"), concurrency_id=prefix, inputs_kwargs=keywords
    )


def _translate_tab(model: DemoModel, prefix: str, max_input_tokens: int) -> None:
    layers, heads = model.config.decoder_layers, model.config.num_attention_heads
    with gr.Row():
        with gr.Column():
            source = gr.Textbox(label="Source sentence", lines=3, elem_id=f"{prefix}-input")
            num_beams, length_penalty = _decoding_controls(model, prefix)
            button = gr.Button("Translate", variant="primary", elem_id=f"{prefix}-button")
        with gr.Column():
            translation = gr.Textbox(label="Translation", interactive=False, elem_id=f"{prefix}-output")
            with gr.Row():  # numbers (as the API takes them), 0 for the mean
                layer = gr.Slider(
                    0, layers, value=0, step=1, label="Layer (0: mean of layers)", elem_id=f"{prefix}-layer"
                )
                head = gr.Slider(0, heads, value=0, step=1, label="Head (0: mean of heads)", elem_id=f"{prefix}-head")
            heatmap = gr.Image(label="Cross-attention", type="pil", format="png", elem_id=f"{prefix}-heatmap")
    maps = gr.State(None)
    inputs = [source, num_beams, length_penalty, layer, head]
    _answer(
        [button.click, source.submit], translate(model, max_input_tokens), inputs, [translation, heatmap, maps], prefix
    )
    for chooser in (layer, head):
        chooser.change(_png, [maps, layer, head], heatmap, queue=False, api_visibility="private")


def _parse_tab(model: DemoModel, prefix: str, max_input_tokens: int) -> None:
    with gr.Row():
        with gr.Column():
            words = gr.Textbox(label="Words (separated by spaces)", lines=2, elem_id=f"{prefix}-input")
            num_beams, length_penalty = _decoding_controls(model, prefix)
            grammar = gr.Checkbox(True, label="Tree grammar (only well-formed trees)", elem_id=f"{prefix}-grammar")
            button = gr.Button("Parse", variant="primary", elem_id=f"{prefix}-button")
        with gr.Column():
            tree = gr.Textbox(label="Tree", interactive=False, elem_id=f"{prefix}-output")
            note = gr.Markdown(label="Note", elem_id=f"{prefix}-note")
    drawing = gr.HTML(label="Tree drawing", elem_id=f"{prefix}-drawing")
    inputs, outputs = [words, num_beams, length_penalty, grammar], [tree, drawing, note]
    _answer([button.click, words.submit], parse(model, max_input_tokens), inputs, outputs, prefix)


def _summarize_tab(model: DemoModel, prefix: str, max_input_tokens: int) -> None:
    decoding = model.decoding
    pointer = bool(getattr(model.config, "pointer_generator", False))
    longest = max(256, decoding["max_new_tokens"] or 0)
    with gr.Row():
        with gr.Column():
            document = gr.Textbox(label="Document", lines=8, elem_id=f"{prefix}-input")
            num_beams, length_penalty = _decoding_controls(model, prefix)
            no_repeat = _setting_slider(
                least("no_repeat_ngram_size"),
                6,
                decoding["no_repeat_ngram_size"] or 0,
                "No repeated n-grams of size (0: off)",
                f"{prefix}-no-repeat",
            )
            no_stutter = _setting_slider(
                least("no_stutter_span_size"),
                8,
                decoding["no_stutter_span_size"] or 0,
                "No span of up to this many tokens twice in a row, unless the document has it so (0: off)",
                f"{prefix}-no-stutter",
            )
            min_length = _setting_slider(
                least("min_new_tokens"),
                longest,
                decoding["min_new_tokens"] or 0,
                "Minimum summary length (tokens)",
                f"{prefix}-min-length",
            )
            max_length = _setting_slider(
                least("max_new_tokens"),
                longest,
                decoding["max_new_tokens"] or longest,
                "Maximum summary length (tokens)",
                f"{prefix}-max-length",
            )
            button = gr.Button("Summarize", variant="primary", elem_id=f"{prefix}-button")
        with gr.Column():
            summary = gr.Textbox(label="Summary", interactive=False, elem_id=f"{prefix}-output")
            note = gr.Markdown(label="Note", elem_id=f"{prefix}-note")
            copied = gr.HighlightedText(
                label="Copied from the document: each summary token shaded by 1 - p_gen",
                visible=pointer,
                elem_id=f"{prefix}-copied",
            )
            sources = gr.HighlightedText(
                label="Copied from: each document token shaded by how much the summary copied it",
                visible=pointer,
                elem_id=f"{prefix}-sources",
            )
            bars = gr.Image(
                label="p_gen: 1 generated from the vocabulary, 0 copied",
                type="pil",
                format="png",
                visible=pointer,
                elem_id=f"{prefix}-p-gen",
            )
    sliders = {
        "num_beams": num_beams,
        "length_penalty": length_penalty,
        "no_repeat_ngram_size": no_repeat,
        "min_new_tokens": min_length,
        "max_new_tokens": max_length,
        "no_stutter_span_size": no_stutter,
    }  # a summarization setting without a slider here is a KeyError when the tab is built
    settings = {parameter: sliders[name] for name, parameter in SUMMARY_PARAMETERS.items()}
    outputs = [summary, copied, sources, bars, note]
    _answer([button.click], summarize(model, max_input_tokens), [document], outputs, prefix, settings)


# A model's task (`config.task`) -> its tab's title and builder. A new task's tab is one entry here.
TASKS: dict[str, tuple[str, Callable[[DemoModel, str, int], None]]] = {
    "translation": ("Translate", _translate_tab),
    "parsing": ("Parse", _parse_tab),
    "summarization": ("Summarize", _summarize_tab),
}


def build_app(models: list[str], max_input_tokens: int = APP_INPUT_TOKENS) -> "gr.Blocks":
    """The demo of `models` (folders or Hub ids): a tab for each, titled by its task, with the model's name when
    several share a task. Element ids are `{task}-{n}-input`, `-button`, `-output`, ... (n counts models of a task
    from 0). Raises `ModelLoadError` for a model whose config cannot be read, ValueError for a task without a tab."""
    if not models:
        raise ValueError("give at least one model")
    demo_models = [DemoModel.read(name) for name in models]
    for model in demo_models:
        if model.task not in TASKS:
            raise ValueError(f"{model.name} is a {model.task} model; the app has tabs for {', '.join(TASKS)} models")
    with gr.Blocks(title="hf_vanilla: Attention Is All You Need") as demo:
        gr.Markdown(
            "# hf_vanilla\nThe Transformer of *Attention Is All You Need* (Vaswani et al., 2017): "
            + ", ".join(f"`{model.name}`" for model in demo_models)
        )
        counts: dict[str, int] = {}
        with gr.Tabs():
            for model in demo_models:
                title, build = TASKS[model.task]
                number = counts[model.task] = counts.get(model.task, -1) + 1
                shared = sum(other.task == model.task for other in demo_models) > 1
                with gr.Tab(f"{title}: {model.name}" if shared else title, elem_id=f"{model.task}-{number}-tab"):
                    gr.Markdown(f"Model: `{model.name}`")
                    build(model, f"{model.task}-{number}", max_input_tokens)
    demo.queue(default_concurrency_limit=1)  # one decoding at a time per tab; the others wait their turn
    return demo


def launch(
    models: list[str],
    host: str | None = None,
    port: int | None = None,
    max_input_tokens: int = APP_INPUT_TOKENS,
    share: bool = False,
    **launch_kwargs,
):
    """Builds the demo of `models` and serves it on `host`:`port` (Gradio's defaults, 127.0.0.1:7860, or a Space's,
    when None), with a public gradio.live link too when `share`; prints the address(es) as soon as it serves, then
    blocks until Ctrl-C (unless `prevent_thread_lock=True`: the demo is returned serving). A port already in use is a
    ValueError in one line, before the models are read."""
    if port is not None:
        check_port(host or "127.0.0.1", port)
    demo = build_app(models, max_input_tokens)
    block = not launch_kwargs.pop("prevent_thread_lock", False)
    demo.launch(
        server_name=host,
        server_port=port,
        theme=THEME,
        show_error=True,
        ssr_mode=False,
        share=share,
        prevent_thread_lock=True,  # serving once it returns: the address is printed, then this thread waits
        # Gradio's own lines speak of launch()'s arguments; the one line below speaks of the CLI's flags.
        **{"quiet": True, **launch_kwargs},
    )
    public = " (--share: a public link too)"
    if share:
        public = f" and {demo.share_url}" if demo.share_url else " (no public link: gradio.live was not reached)"
    print(f"serving the demo on {demo.local_url}{public}; Ctrl-C stops it", flush=True)
    if block:
        demo.block_thread()
    return demo


def check_port(host: str, port: int) -> None:
    """ValueError "port P is in use: choose another --port" unless `port` can be bound on `host`."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ValueError(f"port {port} is in use: choose another --port") from None
            raise ValueError(f"cannot serve on {host}:{port}: {error.strerror}") from None
