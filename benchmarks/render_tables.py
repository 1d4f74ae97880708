"""docs/benchmarks.md's measured figures, and the README's summary of its verdict tables, rendered from the records
under benchmarks/results/.

    python -m benchmarks.render_tables           # rewrite the pages' record blocks from the records
    python -m benchmarks.render_tables --check   # exit 1, naming the blocks, where a page and the records differ

Each block of a page sits between `<!-- record: NAME -->` and `<!-- /record -->`; NAME is one of `BLOCKS` on
docs/benchmarks.md, of `README_BLOCKS` on the README, which name the record(s) each is read from. Everything between
the two comments is rewritten: a figure is changed by recording a new run (the command each block names), never by
hand. tests/test_docs.py checks that each page equals its rendering and that no table of a page stands outside a
block. Every block names the machine its records ran on, read by `machine` alone: records of different dates wrote
their headers differently.
"""

import argparse
import json
import re
import statistics
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- record: ([\w-]+) -->\n)(.*?)(<!-- /record -->)", re.DOTALL)

MARIAN_RECORD = "2026-11-23-cpu.json"
ENGINE_RECORDS = ("2026-11-23-cpu-engines.json", "2026-11-23-cpu-engines-speed-2.json")
ENGINES = ("hf_vanilla", "MarianMTModel", "CTranslate2 float32", "CTranslate2 int8")
# The decoding settings, as the records key them, and as the tables name them.
SETTINGS = {
    "greedy_b1": "greedy, batch 1",
    "beam4_b1": "beam 4, batch 1",
    "greedy_b16": "greedy, batch 16",
    "beam4_b16": "beam 4, batch 16",
}


def record(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def machine_header(run: dict) -> dict:
    """The CPU part of a record's header, whichever it has (`machine`'s docstring): {} where it names none."""
    if "environment" in run:
        return run["environment"]["machine"]
    return run["device"] if isinstance(run.get("device"), dict) else {}


def boot(run: dict) -> str | None:
    """The boot a record ran in (its header's `boot_id`), None where the record predates the field."""
    return machine_header(run).get("boot_id")


def machine(run: dict, with_boot: bool = True) -> str:
    """The machine a record ran on, as the page names it, from whichever header the record has: the `environment`
    that `benchmarks/environment.py` writes (its `machine`), or the older headers: a peer run's `device` (a dict,
    naming the CPU model from 2026-11-27 on), compare_marian's and gpu_suite's `device` (a string: "cpu" or the GPU's
    name), compare_engines' `setting` and pointer_generator_speed's `settings` (architecture, cores, threads). A
    header's `boot_id` names the boot as well: one CPU name has covered virtual machines of different speeds. A GPU
    in an `environment` is named with its host, whose speed moves small-batch GPU figures too. `with_boot=False`: the
    machine without its boot (`machine_kind`)."""
    device, gpu = run.get("device"), None
    setting = next((s for s in (run.get("setting"), run.get("settings")) if isinstance(s, dict)), {})
    if "environment" in run:
        header = machine_header(run)
        device = {**header, "cpu_count": header.get("cores"), "threads": header.get("threads")}
        gpu = header.get("gpu")
    if isinstance(device, str) and device != "cpu":
        return device
    header = (
        device if isinstance(device, dict) else {"processor": setting.get("cpu"), "cpu_count": setting.get("cores")}
    )
    cores, architecture = header.get("cpu_count"), header.get("processor") or "CPU"
    name = f"{cores}-core {architecture}" if cores else architecture
    name = f"{header['cpu_model']} ({name})" if header.get("cpu_model") else f"{name} (model not recorded)"
    threads = header.get("threads") or setting.get("threads")
    name = f"{name}, {threads} threads" if threads else name
    name = f"{name}, boot {header['boot_id'][:8]}" if with_boot and header.get("boot_id") else name
    return f"{gpu} on {name}" if gpu else name


def machine_kind(run: dict) -> str:
    """A record's machine without its boot. The boots of one CPU name and core count run at speeds a third apart,
    and one name has covered two generations (AVX2 and AVX-512 kernels: a seed's figures differ by rounding), but a
    task's figure over seeds is the system's on either: the verdict tables pool a machine's boots for quality (one
    run a seed) and take speed ratios within each boot (`speed_ratio`; docs/experiments.md, "seeds pooled over
    boots")."""
    return machine(run, with_boot=False)


def number(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def wrapped(text: str) -> str:
    """A paragraph of prose wrapped at the docs' 119 columns, ended by a newline."""
    return textwrap.fill(text, 119, break_long_words=False, break_on_hyphens=False) + "\n"


def table(header: list[str], rows: list[list[str]]) -> str:
    rule = "|" + "---|" * len(header) + "\n"
    lines = ["| " + " | ".join(cells) + " |\n" for cells in [header, *rows]]
    return lines[0] + rule + "".join(lines[1:])


def marian_block() -> str:
    """compare_marian.py --record on the CPU: training and decoding beside MarianMTModel and FSMT, and the sampler."""
    run = record(MARIAN_RECORD)
    setting, results = run["setting"], run["results"]
    ours, marian, fsmt = results["hf_vanilla"], results["MarianMTModel"], results["FSMT"]
    rows = [["training tokens/s", "train_tokens_per_s"], ["peak memory (MiB)", "peak_memory_mib"]]
    rows += [[f"generate {label} (tokens/s)", f"generate_{key}_tok_s"] for key, label in SETTINGS.items()]
    cells = [
        [label, *(number(model[key]) for model in (ours, marian, fsmt)), number(ours[key] / marian[key], 2)]
        for label, key in rows
    ]
    length, sampler = setting["length"], results["sampler"]
    return (
        wrapped(
            f"`benchmarks/results/{MARIAN_RECORD}` ({run['date']}), on {machine(run)}: {setting['dtype']}, torch "
            f"{run['torch']}, transformers {run['transformers']}; batch {setting['batch_size']} × {length} + {length} "
            "tokens, "
            f"{setting['new_tokens']} new tokens, each figure the mean of {setting['repeats']} timed calls after a "
            f"warm-up; hf_vanilla's and Marian's logits differ by at most "
            f"{ours['max_logit_difference_vs_marian']:.1e}:"
        )
        + "\n"
        + table(["figure", "hf_vanilla", "MarianMTModel", "FSMT", "hf_vanilla / Marian"], cells)
        + "\n"
        + wrapped(
            f"The token-budget sampler pads {sampler['sampler_padding']:.1%} of a "
            f"{number(sampler['sampler_max_tokens'], 0)}-token batch on the WMT sample, random batches "
            f"{sampler['random_padding']:.1%} (a count, the same on every machine)."
        )
    )


def _speeds(model: str) -> str:
    """The engines' speed table of `model` ("demo" or "base"): median (best) of each record, " · " between them."""
    runs = [record(name)["results"][model]["speed"] for name in ENGINE_RECORDS]

    def cell(engine: str, key: str) -> str:
        return " · ".join(f"{number(r[engine][key]['median'], 0)} ({number(r[engine][key]['best'], 0)})" for r in runs)

    title = "demo model" if model == "demo" else "Transformer-base size"
    return table([title, *ENGINES], [[label, *(cell(e, key) for e in ENGINES)] for key, label in SETTINGS.items()])


def _ratio_range(model: str, faster: str, slower: str) -> str:
    """The least and greatest ratio of `faster`'s median speed to `slower`'s, over the settings and both records."""
    ratios = [
        r["results"][model]["speed"][faster][key]["median"] / r["results"][model]["speed"][slower][key]["median"]
        for r in map(record, ENGINE_RECORDS)
        for key in SETTINGS
    ]
    return f"{min(ratios):.1f}-{max(ratios):.1f}x"


def engine_speed_block() -> str:
    """compare_engines.py: target tokens/s of the four engines on the demo model and at Transformer-base size."""
    setting = record(ENGINE_RECORDS[0])["setting"]
    names = " and ".join(f"`benchmarks/results/{name}`" for name in ENGINE_RECORDS)
    return (
        wrapped(
            f"{names}, on {machine(record(ENGINE_RECORDS[0]))} ({setting['rounds']} rounds, {setting['sentences_b1']} "
            f"sentences at batch 1 and {setting['sentences_b16']} at batch 16, {setting['new_tokens']} new tokens "
            f"each; the demo model has {number(setting['demo_parameters'], 0)} parameters; {setting['note']}): target "
            "tokens/s, median (best round) of the first record · of the second (`--skip-bleu`):"
        )
        + "\n"
        + _speeds("demo")
        + "\n"
        + _speeds("base")
        + "\n"
        + wrapped(
            f"CTranslate2 float32 runs at {_ratio_range('demo', 'CTranslate2 float32', 'hf_vanilla')} hf_vanilla's "
            f"speed on the demo model and {_ratio_range('base', 'CTranslate2 float32', 'hf_vanilla')} at "
            f"Transformer-base size; int8 at {_ratio_range('demo', 'CTranslate2 int8', 'CTranslate2 float32')} and "
            f"{_ratio_range('base', 'CTranslate2 int8', 'CTranslate2 float32')} CTranslate2 float32's (medians)."
        )
    )


def engine_bleu_block() -> str:
    """compare_engines.py: each engine's sacreBLEU on the demo's test verses, and its outputs equal to hf_vanilla's."""
    bleu = record(ENGINE_RECORDS[0])["results"]["demo"]["bleu"]
    decodings = {"greedy": "greedy", "beam 4": "beam 4"}
    rows = [
        [label, *(number(bleu[f"{e}, {key}"]["sacrebleu"], 2) for e in ENGINES)] for key, label in decodings.items()
    ]
    same = [", ".join(str(bleu[f"{e}, {key}"]["same_tokens_as_hf_vanilla"]) for key in decodings) for e in ENGINES]
    rows.append(["outputs identical to hf_vanilla's (greedy, beam 4)", *same])
    paper = next(value for key, value in bleu.items() if key.startswith("hf_vanilla, paper decoding"))
    sentences = bleu["hf_vanilla, greedy"]["sentences"]
    at_limit = sum(bleu[f"{e}, {key}"]["at_length_limit"] for e in ENGINES for key in decodings)
    int8 = [bleu[f"CTranslate2 int8, {key}"] for key in decodings]
    changed = ", ".join(f"{sentences - row['same_tokens_as_hf_vanilla']}" for row in int8)
    moved = ", ".join(
        f"{row['sacrebleu'] - bleu[f'CTranslate2 float32, {key}']['sacrebleu']:+.2f}"
        for row, key in zip(int8, decodings)
    )
    return (
        wrapped(
            f"`benchmarks/results/{ENGINE_RECORDS[0]}`: sacreBLEU on the demo's {sentences} test verses "
            f"(hf_vanilla with the paper's decoding: {number(paper['sacrebleu'], 2)}); {at_limit} outputs reached "
            "the length limit:"
        )
        + "\n"
        + table(["sacreBLEU", *ENGINES], rows)
        + "\n"
        + wrapped(
            f"int8 changes {changed} of the {sentences} outputs (greedy, beam 4) and BLEU by {moved} against "
            "CTranslate2 float32."
        )
    )


# The peers' records (`python -m benchmarks.peers`): one verdict table a task on docs/benchmarks.md, and their summary,
# a line a task, on the README.
PEER_METRICS = {"sacrebleu": "sacreBLEU", "rouge1": "ROUGE-1", "f1": "EVALB F1"}
# A machine's speed reference: the first of these systems with an idle run of the task there (hf_vanilla-normal-init
# is the translation recipe as it ran before 2026-11-28: the same work a step, another initial draw).
SPEED_REFERENCES = ("hf_vanilla", "hf_vanilla-normal-init")
# What an hf_vanilla row other than the recipe's own run is.
HF_VANILLA_VARIANTS = {
    "hf_vanilla-ct2": "the hf_vanilla runs' CTranslate2 export (their training figures), decoding with length "
    "normalization and one length limit a split",
    "hf_vanilla-ct2-normal-init": "the hf_vanilla-normal-init runs' CTranslate2 export, as hf_vanilla-ct2",
    "hf_vanilla-normal-init": "the recipe with N(0, 0.02) projections and a `<s>` start (`--init-scheme normal "
    "--decoder-start bos`)",
    "hf_vanilla-no-copy": "the recipe without its copy mechanism (`--no-pointer-generator`)",
    "hf_vanilla-no-grammar": "the recipe decoding freely, then repairing (`--no-tree-grammar`)",
}
# The toolkit of a system, by its name's start (`sockeye-post-norm` is Sockeye's), as the pages name it; the README's
# summary has a column for each peer of `README_PEERS`.
TOOLKITS = {
    "hf_vanilla": "hf_vanilla",
    "fairseq": "fairseq",
    "opennmt-py": "OpenNMT-py",
    "sockeye": "Sockeye",
    "supar": "supar",
}
README_PEERS = ("fairseq", "opennmt-py", "sockeye")
# A task's trivial baseline, by its record (`python -m benchmarks.lead_baseline`): a row whose seeds never beat it is
# not a measurement of its toolkit (issue 63).
TRIVIAL_BASELINES = {"summarization": "lead-baseline-summarization.json"}
# Why a peer system stays under its task's trivial baseline, where its code was found to say (issue 63): a sentence
# under the verdict table of a task where it does (its figures in the peers' manual or the experiments, named).
UNDER_BASELINE_WHY = {
    "fairseq-no-copy": "it fits the subjects as well as the recipe's model (test NLL, seed 1 on the Xeon) but ranks "
    "short ones first (2.7-3.1 words, the references 6.8); at the `--lenpen` its validation split chooses (1.0 of "
    "0.6-3.0, each seed) it scores 14.17 ± 1.02, above the baseline at seed 1 only (experiments, 2026-11-30)",
    "opennmt-py-no-copy": "its documented initialisation (`param_init_glorot`) draws the tied embeddings "
    "Xavier-uniform, a third of the sinusoids' scale once multiplied by sqrt(d), and the model learns to read its "
    "documents late and little; with them drawn as the recipe's, the same run scores in fairseq's transformer's range "
    "(the peers' manual, why the summarization figures differ)",
}
# The rows issue 63 asks of each task: at least `SEEDS_OWED` seeds each, each run alone, on today's machine at today's
# preset; a verdict table names those still owed.
REQUIRED = {
    "translation": ("hf_vanilla", "fairseq", "opennmt-py", "sockeye"),
    "summarization": (
        "hf_vanilla", "hf_vanilla-no-copy", "fairseq", "fairseq-no-copy", "opennmt-py", "opennmt-py-no-copy"
    ),
    "parsing": ("hf_vanilla", "hf_vanilla-no-grammar", "fairseq"),
}  # fmt: skip
SEEDS_OWED = 3
# Today's presets of each task's recipe (`hf_vanilla.training.presets`), and the settings of a record compared with
# its preset's: a record whose budget differs ran a former preset, and its row says so.
PRESETS = {"translation": "WMT_PRESETS", "summarization": "SUMMARIZATION_PRESETS", "parsing": "PARSING_PRESETS"}
BUDGET = {
    "max_steps": "{:,} updates",
    "tokens_per_step": "{:,} tokens an update",
    "warmup_steps": "{:,} warm-up updates",
    "vocab_size": "{:,} pieces",
}
DATE = re.compile(r"\d{4}-\d\d-\d\d")


def peer_records(task: str = "*") -> list[dict]:
    """Every full peer run's record of `task` (`peers-TASK-*.json`; every task's by default; a `short_check` run is no
    figure), each with the name of its file under `record_file`."""
    paths = sorted(RESULTS.glob(f"peers-{task}-*.json"))
    records = [json.loads(path.read_text()) | {"record_file": path.name} for path in paths]
    return [r for r in records if not r.get("short_check")]


def record_date(run: dict) -> str:
    """The day a record was written: its header's date, else the one in its file's name; "" where neither says."""
    found = DATE.search(run.get("environment", {}).get("date") or run.get("record_file", ""))
    return found.group(0) if found else ""


def todays_machine() -> str | None:
    """The machine of today's presets (`machine_kind`, its boots pooled): that of the newest peer record of any task
    (of one day, a record that names its CPU model is the newer: records predating the field do not); None where no
    run is recorded."""
    records = peer_records()
    if not records:
        return None
    return machine_kind(max(records, key=lambda r: (record_date(r), "(model not recorded)" not in machine(r))))


def todays_preset(task: str, name: str | None) -> dict:
    """The recipe's preset `name` of `task` as the code holds it today ({} where there is none)."""
    from hf_vanilla.training import presets

    return getattr(presets, PRESETS[task]).get(name, {}) if name else {}


def former_preset(task: str, run: dict) -> str:
    """What a record's budget was (`BUDGET`) where it is not its recipe's preset's of today, as its row says it:
    `2,400 updates: a former preset`; "" where it is."""
    settings = run.get("resolved_settings", {})
    preset = todays_preset(task, settings.get("preset"))
    changed = [name for name in BUDGET if name in settings and name in preset and settings[name] != preset[name]]
    return ", ".join(BUDGET[name].format(settings[name]) for name in changed) + ": a former preset" if changed else ""


def trivial_baseline(task: str) -> dict | None:
    """The record of `task`'s trivial baseline (`TRIVIAL_BASELINES`), None where the task has none."""
    name = TRIVIAL_BASELINES.get(task)
    return record(name) | {"record_file": name} if name and (RESULTS / name).exists() else None


def under_baseline(task: str, runs: list[dict]) -> bool:
    """Whether no run of `runs` beats `task`'s trivial baseline."""
    baseline = trivial_baseline(task)
    return bool(baseline) and max(r["quality"]["value"] for r in runs) <= baseline["quality"]["value"]


def toolkit(system: str) -> str:
    """The toolkit a system is run with, as the pages name it (`TOOLKITS`)."""
    return next((name for start, name in TOOLKITS.items() if system.startswith(start)), system)


def seeds(runs: list[dict]) -> str:
    """The runs' seeds, consecutive ones as a range: `1-7`, `1, 3`."""
    numbers, spans = sorted({r["seed"] for r in runs}), []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def newest_per_seed(runs: list[dict]) -> list[dict]:
    """The newest run of each seed (one seed run on two boots is one sample of its system, not two), by seed; of one
    day, by the header's time where it has one."""
    order = sorted(runs, key=lambda r: (record_date(r), r.get("environment", {}).get("date") or ""))
    newest = {r["seed"]: r for r in order}
    return [newest[seed] for seed in sorted(newest)]


def qualities(runs: list[dict]) -> list[float]:
    """The runs' quality figures, one a seed (`newest_per_seed`)."""
    return [r["quality"]["value"] for r in newest_per_seed(runs)]


def quality(values: list[float]) -> str:
    """Mean ± standard deviation (least-greatest) over seeds; one seed's value alone."""
    if len(values) == 1:
        return number(values[0], 2)
    return (
        f"{number(statistics.mean(values), 2)} ± {number(statistics.stdev(values), 2)} "
        f"({number(min(values), 2)}-{number(max(values), 2)})"
    )


def idle(runs: list[dict]) -> list[dict]:
    """The runs made on an idle machine (a record's `machine_shared`: a run beside other work times nothing)."""
    return [r for r in runs if not r.get("machine_shared")]


def idle_mean(runs: list[dict], key: str) -> float | None:
    """The mean of `key` over the idle runs, None where there are none."""
    return statistics.mean(r[key] for r in idle(runs)) if idle(runs) else None


def speed_ratio(runs: list[dict], reference: list[dict], key: str) -> float | None:
    """`key` of the idle runs as a multiple of the reference's idle mean on each run's own boot (`boot`), averaged
    over the runs that have one: a machine's boots run at different speeds, so a ratio never crosses two. None
    where no idle run has an idle reference run on its boot."""
    ratios = []
    for run in idle(runs):
        base = idle_mean([r for r in reference if boot(r) == boot(run)], key)
        ratios += [run[key] / base] if base else []
    return statistics.mean(ratios) if ratios else None


def speed(runs: list[dict], reference: list[dict], key: str, digits: int) -> str:
    """`key`'s idle mean, and its ratio to the reference runs' on the same boots (`speed_ratio`): `15,925.2 (0.82)`."""
    value, ratio = idle_mean(runs, key), speed_ratio(runs, reference, key)
    if value is None:
        return "shared machine"
    return f"{number(value, digits)} ({ratio:.2f})" if ratio is not None else number(value, digits)


def unmatched(system: str, runs: list[dict]) -> str:
    """What a row's system does not match of the recipe: a peer's unmatched settings, as its newest record's settings
    table names them; an hf_vanilla variant's own difference."""
    if system.startswith("hf_vanilla"):
        return HF_VANILLA_VARIANTS.get(system.split(" ")[0], "–")
    newest = max(runs, key=record_date)
    return ", ".join(row["setting"] for row in newest.get("settings", []) if not row.get("matched", True)) or "–"


def system_name(run: dict) -> str:
    """A row's system: the record's, with the peer's own learning-rate scale where it was given one."""
    scale = run.get("resolved_settings", {}).get("peer_lr_scale")
    return run["system"] + (f" (lr_scale {scale:g})" if scale else "")


Key = tuple[str, str, str]  # a verdict row: its machine, its system (`system_name`) and its preset (`former_preset`)


def verdict_groups(task: str) -> dict[Key, list[dict]]:
    """`task`'s full runs, a list a row (`Key`): today's machine first, then the one with the most runs; on each,
    hf_vanilla's rows first, each system at today's preset before a former one."""
    records = peer_records(task)
    today, counts = todays_machine(), Counter(machine_kind(r) for r in records)
    order = sorted(counts, key=lambda name: (name != today, -counts[name]))
    groups: dict[Key, list[dict]] = {}
    keyed = [((machine_kind(r), system_name(r), former_preset(task, r)), r) for r in records]
    for key, r in sorted(keyed, key=lambda pair: (order.index(pair[0][0]), not pair[0][1].startswith("hf_vanilla"),
                                                  pair[0][1], pair[0][2] != "")):  # fmt: skip
        groups.setdefault(key, []).append(r)
    return groups


def reference_of(groups: dict[Key, list[dict]], key: Key, timed: bool = True) -> tuple[str | None, list[dict]]:
    """A row's reference: the first system of `SPEED_REFERENCES` with runs on the row's machine (idle ones where
    `timed`), at the row's preset where it has some, else at another."""
    where, _, preset = key
    presets = [preset, *(p for (m, _, p) in groups if m == where and p != preset)]
    for p in presets:
        for name in SPEED_REFERENCES:
            runs = groups.get((where, name, p), [])
            if idle(runs) if timed else runs:
                return name, runs
    return None, []


def quality_cell(task: str, runs: list[dict]) -> str:
    """The row's quality over its seeds (`quality`), marked where no seed beats the task's trivial baseline."""
    cell = quality(qualities(runs))
    if not under_baseline(task, runs):
        return cell
    baseline = trivial_baseline(task)
    return (
        f"{cell}: never above {baseline['baseline']} ({number(baseline['quality']['value'], 2)}), not a measurement "
        f"of {toolkit(runs[0]['system'])}"
    )


def where_cell(where: str, runs: list[dict], today: str | None) -> str:
    """A row's machine (`machine_kind`) with the boots of the runs that give it a figure (a seed's newest run, an idle
    run's speeds; where a record names its boot), and whether it is today's."""
    found = {boot(r) for r in newest_per_seed(runs) + idle(runs)}
    boots = sorted(b[:8] for b in found - {None}) + (["not recorded"] if None in found else [])
    cell = where + (f", boot{'s' * (len(boots) > 1)} {', '.join(boots)}" if found - {None} else "")
    return cell if where == today else f"{cell}, not today's machine"


def verdict_block(task: str) -> str:
    """`python -m benchmarks.peers --task TASK`: each system's quality over its seeds, its training and decoding speed
    beside hf_vanilla's on the same boots (`speed_ratio`), and what it does not match of the recipe; a row on another
    machine than today's, at a former preset, or never above the trivial baseline says so (`verdict_notes`)."""
    groups = verdict_groups(task)
    if not groups:
        return wrapped("No full run is recorded yet.")
    today = todays_machine()
    rows, references = [], set()
    for key, runs in groups.items():
        where, system, preset = key
        name, reference = reference_of(groups, key)
        references.add(name)
        rows.append(
            [
                f"{system}, {preset}" if preset else system,
                where_cell(where, runs, today),
                seeds(runs),
                quality_cell(task, runs),
                speed(runs, reference, "train_tokens_per_s", 1),
                speed(runs, reference, "decode_sentences_per_s", 2),
                unmatched(system, runs),
            ]
        )
    metric = next(iter(groups.values()))[0]["quality"]["metric"]
    header = ["system", "machine", "seeds", f"{PEER_METRICS.get(metric, metric)}: mean ± sd (least-greatest)",
              "training tokens/s (× hf_vanilla)", "decoding sentences/s (× hf_vanilla)",
              "what it does not match of the recipe"]  # fmt: skip
    return table(header, rows) + "\n" + wrapped(" ".join(verdict_notes(task, groups, references)))


def decoding_together(task: str, system: str, where: str) -> list[dict]:
    """The records of `benchmarks.studies.opennmt_beam_stop` (`decoding-together-SYSTEM-*.json`) of `task` made on
    `where` (`machine_kind`: any of its boots, each ratio taken within one), the newest of each seed: `system` and
    hf_vanilla decoding in turn, each median a ratio to hf_vanilla's."""
    records = [json.loads(path.read_text()) for path in RESULTS.glob(f"decoding-together-{system}-seed*.json")]
    return newest_per_seed([r for r in records if r["task"] == task and machine_kind(r) == where])


def together_range(records: list[dict], figure: str) -> str:
    """The least and greatest ratio to hf_vanilla's decoding speed of `figure` over `records`, as "0.93-1.03×"."""
    ratios = sorted(record["figures"][figure]["median_vs_hf_vanilla"] for record in records)
    return f"{ratios[0]:.2f}×" if ratios[0] == ratios[-1] else f"{ratios[0]:.2f}-{ratios[-1]:.2f}×"


def together_notes(task: str, groups: dict[Key, list[dict]], today: str | None) -> list[str]:
    """A sentence for each peer that decoded in turn with hf_vanilla on `today`'s machine (`decoding_together`): runs
    alone hours apart set a machine's drift into their ratio, turns do not."""
    notes = []
    for system in sorted({runs[0]["system"] for runs in groups.values()} - set(SPEED_REFERENCES)):
        if records := decoding_together(task, system, today):
            labels = records[0]["labels"]
            parts = [f"{together_range(records, f)} {labels[f]}" for f in records[0]["figures"] if f in labels]
            notes.append(
                f"Decoding in turn with hf_vanilla (`benchmarks.studies.opennmt_beam_stop`, seeds {seeds(records)}, "
                f"medians of {records[0]['repeats']}), `{system}` is at {', '.join(parts)}."
            )
    return notes


def control_notes(groups: dict[Key, list[dict]], today: str | None) -> list[str]:
    """A sentence for the peers' controls on `today`'s machine at today's preset (a peer system named for an
    hf_vanilla variant, as `fairseq-no-copy` for `hf_vanilla-no-copy`): their speeds beside that variant's on the same
    boots (`speed_ratio`), like model beside like, where the table's ratios are to the recipe's full model."""
    variants = {name.removeprefix("hf_vanilla"): runs for (where, name, preset), runs in groups.items()
                if where == today and not preset and name.startswith("hf_vanilla-")}  # fmt: skip
    notes = []
    for suffix, reference in variants.items():
        parts = []
        for (where, name, preset), runs in groups.items():
            if where != today or preset or name.startswith("hf_vanilla") or not runs[0]["system"].endswith(suffix):
                continue
            train, decode = (
                speed_ratio(runs, reference, key) for key in ("train_tokens_per_s", "decode_sentences_per_s")
            )
            parts += [f"`{name}` {train:.2f}× / {decode:.2f}×"] if train and decode else []
        if parts:
            notes.append(
                f"Beside `hf_vanilla{suffix}` on the same boots (training / decoding speed): {', '.join(parts)}."
            )
    return notes


def verdict_notes(task: str, groups: dict[Key, list[dict]], references: set) -> list[str]:
    """The sentences under a verdict table: today's machine, the speed references other than hf_vanilla, the trivial
    baseline, the learning-rate sweeps, the peers' controls beside hf_vanilla's (`control_notes`), why a peer stays
    under the baseline where that is found (`UNDER_BASELINE_WHY`), what each relabelled peer record was (its
    `relabelled`), and the rows of issue 63 still owed."""
    today, notes = todays_machine(), []
    if any(where != today for where, _, _ in groups):
        notes.append(f"Today's machine (the newest records'): {today}.")
    others = sorted(name for name in references - {SPEED_REFERENCES[0]} if name)
    notes += [f"Speeds beside `{name}`'s where a machine has no `{SPEED_REFERENCES[0]}` run." for name in others]
    if baseline := trivial_baseline(task):
        notes.append(
            f"The trivial baseline, {baseline['baseline']} (`benchmarks/results/{baseline['record_file']}`), scores "
            f"{number(baseline['quality']['value'], 2)} on the same test split."
        )
    notes += sweep_notes(groups, today) + together_notes(task, groups, today) + control_notes(groups, today)
    under = {runs[0]["system"] for runs in groups.values() if under_baseline(task, runs)}
    notes += [f"`{system}` stays under the baseline: {UNDER_BASELINE_WHY[system]}." for system in sorted(under)
              if system in UNDER_BASELINE_WHY]  # fmt: skip
    relabelled = {r["system"]: r["relabelled"] for runs in groups.values() for r in runs if "relabelled" in r}
    notes += [f"`{system}`: {note}." for system, note in relabelled.items() if not system.startswith("hf_vanilla")]
    if owed := owed_rows(task):
        notes.append(
            f"Owed by issue 63 on {today}, {SEEDS_OWED} seeds each run alone at today's preset (the seeds so far): "
            f"{', '.join(owed)}."
        )
    return notes


def validation_perplexity(run: dict) -> float | None:
    """A peer run's last validation perplexity, as the peer computes it (OpenNMT-py's and fairseq's `valid_ppl`,
    Sockeye's `validation_perplexity`): comparable between learning rates of one peer, not between peers."""
    stats = run.get("train_stats", {})
    return stats.get("valid_ppl", stats.get("validation_perplexity"))


Rate = tuple[tuple[float, float], Key]  # a sweep's rate, (lr_scale, peak) by `peer_rate`, and its row


def sweeps(groups: dict[Key, list[dict]], today: str | None) -> dict[tuple[str, str], list[Rate]]:
    """Each peer system run at more than one learning rate on `today`'s machine at one preset (issue 63's sweep),
    keyed (system, preset): its rates, highest first, each with its row."""
    from benchmarks.peers.common.settings import peer_rate

    found: dict[tuple[str, str], list[Rate]] = {}
    for key, runs in groups.items():
        settings = runs[0].get("resolved_settings", {})
        peer = not runs[0]["system"].startswith("hf_vanilla") and {"lr_scale", "peak_lr"} <= set(settings)
        if peer and key[0] == today:
            found.setdefault((runs[0]["system"], key[2]), []).append((peer_rate(settings), key))
    return {name: sorted(rates, key=lambda rate: -rate[0][0]) for name, rates in found.items() if len(rates) > 1}


def mean_validation_perplexity(runs: list[dict]) -> float | None:
    """The runs' mean `validation_perplexity`, None where a run recorded none."""
    perplexities = [validation_perplexity(r) for r in runs]
    return statistics.mean(perplexities) if None not in perplexities else None


def validation_choice(groups: dict[Key, list[dict]], rates: list[Rate]) -> Key | None:
    """The row of a sweep's rates whose runs' mean validation perplexity is lowest; None where a rate's runs recorded
    none."""
    perplexities = {key: mean_validation_perplexity(groups[key]) for _, key in rates}
    return None if None in perplexities.values() else min(perplexities, key=perplexities.get)


def sweep_notes(groups: dict[Key, list[dict]], today: str | None) -> list[str]:
    """A sentence for each of `today`'s sweeps (`sweeps`): each rate's peak, seeds and validation perplexity (mean),
    and the rate that validation chooses (`validation_choice`)."""
    notes = []
    for (system, _), rates in sweeps(groups, today).items():
        parts, scales = [], {key: scale for (scale, _), key in rates}
        for (scale, peak), key in rates:
            runs, found = groups[key], mean_validation_perplexity(groups[key])
            parts.append(
                f"{scale:g} (peak {peak:.2g}, seed{'s' * (len(runs) > 1)} {seeds(runs)}) "
                f"{'none' if found is None else number(found, 2)}"
            )
        pick = validation_choice(groups, rates)
        verdict = f"validation chooses {scales[pick]:g}" if pick else "no choice by validation"
        notes.append(
            f"`{system}` on today's machine by lr_scale, validation perplexity: {', '.join(parts)}: {verdict}."
        )
    return notes


def unchosen_rates(groups: dict[Key, list[dict]], today: str | None) -> set[Key]:
    """The rows of `today`'s sweeps at a rate their validation did not choose (none where it chooses none)."""
    unchosen = set()
    for rates in sweeps(groups, today).values():
        if pick := validation_choice(groups, rates):
            unchosen |= {key for _, key in rates if key != pick}
    return unchosen


def owed_rows(task: str) -> list[str]:
    """The rows of `REQUIRED` with fewer than `SEEDS_OWED` seeds run alone on today's machine at today's preset, each
    with its count: `sockeye (0)`."""
    today, owed = todays_machine(), []
    current = [r for r in idle(peer_records(task)) if machine_kind(r) == today and not former_preset(task, r)]
    for system in REQUIRED.get(task, ()):
        done = {r["seed"] for r in current if r["system"] == system}
        if len(done) < SEEDS_OWED:
            owed.append(f"{system} ({len(done)})")
    return owed


def peer_cell(task: str, groups: dict[Key, list[dict]], peer: str) -> str:
    """The README's cell of `peer` on `task`: hf_vanilla's mean against the peer's best row's, on the row's machine,
    and the peer's speeds as a multiple of hf_vanilla's there. The best row: on today's machine before another (then
    on the one with the most runs, as `verdict_groups` orders them), at today's preset before a former, above the
    trivial baseline before under it, a setting the runner still runs before a relabelled record's (`relabelled`: a
    former setting, such as `sockeye-mkl-generic`), then by its mean. Of a learning-rate sweep only the rate
    validation chooses is a candidate (`unchosen_rates`): test scores pick no rate."""
    today = todays_machine()
    unchosen = unchosen_rates(groups, today)
    keys = [key for key in groups if toolkit(key[1]) == TOOLKITS[peer] and key not in unchosen]
    if not keys:
        return "owed" if peer in REQUIRED.get(task, ()) else "–"

    machines = list(dict.fromkeys(where for where, _, _ in groups))  # today's first, then by their runs

    def rank(key: Key) -> tuple:
        runs = groups[key]
        return (
            -machines.index(key[0]),
            not key[2],
            not under_baseline(task, runs),
            not any("relabelled" in r for r in runs),
            statistics.mean(qualities(runs)),
        )

    key = max(keys, key=rank)
    runs, (where, system, preset) = groups[key], key
    if under_baseline(task, runs):
        baseline = trivial_baseline(task)
        return (
            f"not a measurement: {number(max(r['quality']['value'] for r in runs), 2)} at best, never above "
            f"{baseline['baseline']} ({number(baseline['quality']['value'], 2)})"
        )
    name, ours = reference_of(groups, key, timed=False)
    if not ours:
        return f"{number(statistics.mean(qualities(runs)), 2)}, no hf_vanilla run beside it"
    notes = [system.removeprefix(peer).strip(" -()")] if system != peer else []  # `post-norm`, `lr_scale 0.25`
    notes += [f"beside {name}"] if name != SPEED_REFERENCES[0] else []
    theirs, mine = len(newest_per_seed(runs)), len(newest_per_seed(ours))
    count = f"{theirs} seed" + ("s" if theirs > 1 else "")
    notes += [f"{count} each" if mine == theirs else f"{mine} and {count}"]
    notes += (["not today's machine"] if where != today else []) + ([preset] if preset else [])
    _, timed = reference_of(groups, key)
    ratios = [speed_ratio(runs, timed, k) for k in ("train_tokens_per_s", "decode_sentences_per_s")]
    if None not in ratios:
        speeds = f"speed {ratios[0]:.2f}× / {ratios[1]:.2f}×"
    elif idle(runs):
        speeds = f"speeds: no {name} run alone on its boots"
    else:
        speeds = "speeds: shared machine"
    if together := decoding_together(task, system, where):
        speeds += f" ({together_range(together, together[0]['as_run'])} decoding in turn)"
    means = (number(statistics.mean(qualities(group)), 2) for group in (ours, runs))
    return f"{' vs '.join(means)} ({'; '.join(notes)}); {speeds}"


def readme_verdict_block() -> str:
    """The README's summary of the verdict tables: a line a task, each peer's best row against hf_vanilla on the same
    machine (`peer_cell`)."""
    rows = []
    for task in REQUIRED:
        groups = verdict_groups(task)
        if groups:
            metric = next(iter(groups.values()))[0]["quality"]["metric"]
            rows.append(
                [f"{task}, {PEER_METRICS.get(metric, metric)}", *(peer_cell(task, groups, p) for p in README_PEERS)]
            )
    if not rows:
        return wrapped("No full run is recorded yet.")
    cells = {cell for row in rows for cell in row[1:]}
    legend = [
        "Each cell: hf_vanilla's mean against the peer's best configuration's on one machine, then the peer's "
        f"training and decoding speed × hf_vanilla's there (under 1: slower). Today's machine: "
        f"{todays_machine()}."
    ]
    legend += ["Owed: asked by issue 63, not yet recorded."] if "owed" in cells else []
    legend += ["–: no such task."] if "–" in cells else []
    legend += ["In turn: the two decoding alternately, timed together."] if any("in turn" in c for c in cells) else []
    return table(["task", *(TOOLKITS[p] for p in README_PEERS)], rows) + "\n" + wrapped(" ".join(legend))


GPU_TRAINING = {
    "train-base": "base, eager",
    "train-base-compiled": "base, `torch.compile`",
    "train-big": "big, eager",
    "train-big-compiled": "big, `torch.compile`",
}
GPU_DECODING = {"decode": "dynamic cache", "decode-static": "static cache, compiled"}


def flag(command: list[str], name: str) -> str:
    """The value given to `name` in a recorded command line."""
    return command[command.index(name) + 1]


def gpu_suites() -> dict[str, tuple[list[str], dict[str, dict]]]:
    """Each GPU's suite records (`*-gpu-suite-*.json`) by host (`machine`), the newest first: a step belongs to the
    latest host that ran it (small-batch GPU figures move with the host's speed: two hosts never share a table), with
    its latest finished run there and every finished run's figures there, oldest first, as its `runs`; and the
    records that give a host's steps, by start time, each named with its torch and the steps it gives. The header is
    a schema-1 record's own top level or a schema-2 record's `environment`."""
    suites: dict[str, tuple[list[str], dict[str, dict]]] = {}
    runs = [(json.loads(path.read_text()), path.name) for path in RESULTS.glob("*-gpu-suite-*.json")]
    runs = [(run, run.get("environment", run), name) for run, name in runs]
    for run, about, name in sorted(runs, key=lambda triple: triple[1]["date"]):
        where = {"record": name, "torch": about["torch"], "date": about["date"][:10]}
        gpu = about["machine"]["gpu"] if "machine" in about else run["device"]
        steps = suites.setdefault(machine(run), ([], {}))[1]
        for step, value in run["steps"].items():
            if value["status"] != "ok":
                continue
            for other in [key for key in suites if key != machine(run) and key.split(" on ")[0] == gpu]:
                suites[other][1].pop(step, None)  # a step that a newer host ran again is that host's alone
            earlier = steps.get(step, {}).get("runs", [])
            steps[step] = value | where | {"runs": [*earlier, value["figures"]]}
    suites = {key: suite for key, suite in reversed(suites.items()) if suite[1]}  # the newest host first
    for names, steps in suites.values():
        for record in dict.fromkeys(step["record"] for step in steps.values()):
            given = [name for name, step in steps.items() if step["record"] == record]
            first = steps[given[0]]
            names.append(f"`{record}` (torch {first['torch']}): {', '.join(given)}")
    return suites


def ratio_cell(runs: list[dict], figure: str) -> str:
    """hf_vanilla's `figure` over Marian's in the latest run and, where a step ran more than once on the host, the
    range over its runs: `1.12 (0.95-1.12 over 3 runs)`. One run of a few steps moves by a third."""
    values = [figures["hf_vanilla"][figure] / figures["MarianMTModel"][figure] for figures in runs]
    spread = f" ({number(min(values), 2)}-{number(max(values), 2)} over {len(values)} runs)" if values[1:] else ""
    return number(values[-1], 2) + spread


def gpu_training_rows(steps: dict[str, dict]) -> list[list[str]]:
    """One row per training step: tokens/s of the three models, the ratio to Marian, MFU, peak memory, graphs."""
    rows = []
    for name, label in GPU_TRAINING.items():
        if name not in steps:
            continue
        ours, chunked, marian = (
            steps[name]["figures"][m] for m in ("hf_vanilla", "hf_vanilla chunked", "MarianMTModel")
        )
        graphs = (
            f"{ours['compiled_graphs']} / {ours['graph_breaks']}; {marian['compiled_graphs']} / "
            f"{marian['graph_breaks']}"
            if "compiled_graphs" in ours
            else "eager"
        )
        rows.append(
            [
                label,
                *(number(m["train_tokens_per_s"], 0) for m in (ours, chunked, marian)),
                ratio_cell(steps[name]["runs"], "train_tokens_per_s"),
                f"{number(ours['mfu'], 3)} / {number(marian['mfu'], 3)}",
                f"{number(ours['peak_memory_mib'], 0)} / {number(chunked['peak_memory_mib'], 0)} / "
                f"{number(marian['peak_memory_mib'], 0)}",
                graphs,
            ]
        )
    return rows


def gpu_decoding_rows(steps: dict[str, dict]) -> tuple[list[str], list[list[str]]]:
    """The decoding table's header and rows: each setting's tokens/s for each cache that was measured."""
    done = [name for name in GPU_DECODING if name in steps]
    header = ["setting"] + [f"{GPU_DECODING[n]}: {m}" for n in done for m in ("hf_vanilla", "Marian", "ratio")]
    rows = []
    for key, label in SETTINGS.items():
        cells = [label]
        for name in done:
            ours, marian = (
                steps[name]["figures"][m][f"generate_{key}_tok_s"] for m in ("hf_vanilla", "MarianMTModel")
            )
            cells += [number(ours), number(marian), ratio_cell(steps[name]["runs"], f"generate_{key}_tok_s")]
        rows.append(cells)
    return header, rows


def gpu_notes(steps: dict[str, dict]) -> list[str]:
    """The suite's figures that are sentences, not tables: the CUDA tests and the static cache's graphs."""
    notes = []
    if "cuda-tests" in steps:
        tests = steps["cuda-tests"]["figures"]
        notes.append(
            f"`tests/test_cuda.py`: {tests['passed']} passed, {tests['failures']} failed, {tests['errors']} "
            f"errors, {tests['skipped']} skipped."
        )
    if "decode-static" in steps:
        ours, marian = (steps["decode-static"]["figures"][m] for m in ("hf_vanilla", "MarianMTModel"))
        notes.append(
            f"Static cache, compiled by transformers, over the four settings: hf_vanilla "
            f"{ours['decode_compiled_graphs']} graphs and {ours['decode_graph_breaks']} breaks, Marian "
            f"{marian['decode_compiled_graphs']} graphs and {marian['decode_graph_breaks']} breaks."
        )
    return notes


def gpu_block() -> str:
    """`python -m benchmarks.gpu_suite` on a lent GPU: CUDA tests, bf16 training and decoding beside Marian."""
    parts = []
    for device, (names, steps) in gpu_suites().items():
        dates = ", ".join(sorted({step["date"] for step in steps.values()}))
        parts.append(
            wrapped(
                f"{device}, {dates}, the latest run of each step: {'; '.join(names)}. Each figure is one run; "
                "a ratio's range in brackets spans every run of its step on this host."
            )
        )
        if training := gpu_training_rows(steps):
            header = [
                "setting",
                "hf_vanilla tokens/s",
                "chunked loss",
                "MarianMTModel",
                "hf_vanilla / Marian",
                "MFU (hf_vanilla / Marian)",
                "peak MiB (hf_vanilla / chunked / Marian)",
                "graphs / breaks (hf_vanilla; Marian)",
            ]
            command = next(steps[name]["command"] for name in GPU_TRAINING if name in steps)
            parts.append(
                wrapped(
                    f"Training in bf16 autocast, batch {flag(command, '--batch-size')} × {flag(command, '--length')} "
                    f"+ {flag(command, '--length')} tokens, {flag(command, '--train-steps')} timed steps after the "
                    f"warm-up, the chunked loss {flag(command, '--loss-chunk-tokens')} positions a chunk:"
                )
                + "\n"
                + table(header, training)
            )
        header, decoding = gpu_decoding_rows(steps)
        if len(header) > 1:
            command = next(steps[name]["command"] for name in GPU_DECODING if name in steps)
            parts.append(
                wrapped(
                    f"Decoding in bf16, {flag(command, '--new-tokens')} new tokens, tokens/s, each the mean of "
                    f"{flag(command, '--repeats')} timed calls:"
                )
                + "\n"
                + table(header, decoding)
            )
        parts += [wrapped(note) for note in gpu_notes(steps)]
    return "\n".join(parts) if parts else wrapped("No GPU suite is recorded yet.")


def loss_curves_block() -> str:
    """`python -m benchmarks.loss_curves`, a step of the GPU suite: the same updates in fp32 and in bf16 autocast."""
    parts = []
    for device, (_, steps) in gpu_suites().items():
        if "loss-curves" not in steps:
            continue
        step = steps["loss-curves"]
        figures, summary = step["figures"], step["figures"]["summary"]
        setting, curves = figures["setting"], figures["curves"]
        updates = sorted({1, *range(100, len(curves["fp32"]) + 1, 100)})
        losses = "; ".join(
            f"{kind} {', '.join(f'{curves[kind][n - 1]:.4f}' for n in updates)}" for kind in ("fp32", "bf16")
        )
        parts.append(
            wrapped(
                f"`{step['record']}`, on {device} ({step['date']}, torch {step['torch']}): {setting['steps']} updates "
                f"of {setting['model_size']}, batch {setting['batch_size']}, the same seed and batches in fp32 and in "
                f"bf16 autocast; the training loss at updates {', '.join(f'{n:,}' for n in updates)}: {losses}. "
                f"The last 10 updates' mean loss: {summary['fp32_last10_mean']} and {summary['bf16_last10_mean']} "
                f"(relative difference {summary['last10_relative_difference']}); the largest difference at one "
                f"update {summary['max_abs_difference']}; every loss finite: {summary['finite']}."
            )
        )
    return "\n".join(parts) if parts else wrapped("No loss curves are recorded yet.")


POINTER_GENERATOR_RECORDS = ("pointer_generator_speed_cpu.json", "pointer_generator_speed_cpu_v32k.json")


def pointer_generator_block() -> str:
    """`python -m benchmarks.pointer_generator_speed`: training and decoding tokens/s with and without copying."""
    runs = [record(name) for name in POINTER_GENERATOR_RECORDS]
    setting = runs[0]["settings"]
    rows = []
    for run in runs:
        cells = [number(run["settings"]["vocab_size"], 0)]
        for part in ("train", "decode"):
            speeds = run["results"][part]["tokens_per_s"]
            plain, copy = (speeds[model]["median"] for model in ("plain", "pointer-generator"))
            cells += [f"{number(plain, 0)} / {number(copy, 0)}", f"{copy / plain:.2f}"]
        rows.append(cells)
    header = ["vocabulary", "training tokens/s, plain / copy", "copy / plain",
              "decoding tokens/s (beam 4), plain / copy", "copy / plain"]  # fmt: skip
    names = " and ".join(f"`benchmarks/results/{name}`" for name in POINTER_GENERATOR_RECORDS)
    return (
        wrapped(
            f"{names}, on {machine(runs[0])}: the `{setting['model_preset']}` model, {setting['dtype']}, torch "
            f"{setting['torch']}; {setting['documents']} documents in batches of {number(setting['max_tokens'], 0)} "
            f"tokens, {setting['decode_sentences']} decoded {setting['decode_batch']} at a time, "
            f"{setting['new_tokens']} new tokens each; medians of {setting['repeats']} alternated repeats:"
        )
        + "\n"
        + table(header, rows)
    )


BLOCKS: dict[str, Callable[[], str]] = {
    "compare-marian-cpu": marian_block,
    "engines-speed": engine_speed_block,
    "engines-bleu": engine_bleu_block,
    "verdict-translation": lambda: verdict_block("translation"),
    "verdict-summarization": lambda: verdict_block("summarization"),
    "verdict-parsing": lambda: verdict_block("parsing"),
    "gpu-suite": gpu_block,
    "loss-curves": loss_curves_block,
    "pointer-generator": pointer_generator_block,
}


# The README's blocks, and each rendered page with the blocks it may hold.
README_BLOCKS: dict[str, Callable[[], str]] = {"verdict-readme": readme_verdict_block}
PAGES = {PAGE: BLOCKS, README: README_BLOCKS}


def render(page: str, blocks: dict[str, Callable[[], str]] | None = None) -> str:
    """`page` with every record block rewritten from its records (`blocks`, docs/benchmarks.md's `BLOCKS` unless
    given); a block of an unknown NAME is a KeyError."""
    blocks = BLOCKS if blocks is None else blocks
    return BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)]() + m.group(4), page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 where a page differs from its records.")
    args = parser.parse_args()
    stale = []
    for path, blocks in PAGES.items():
        page = path.read_text()
        rendered = render(page, blocks)
        if args.check:
            pairs = zip(BLOCK.findall(page), BLOCK.findall(rendered))
            stale += [f"{path.name} {name}" for (_, name, body, _), (_, _, new, _) in pairs if body != new]
            continue
        path.write_text(rendered)
        print(f"rendered {len(BLOCK.findall(page))} blocks of {path}")
    if stale:
        sys.exit(f"render_tables: pages differ from their records in: {', '.join(stale)}")


if __name__ == "__main__":
    main()
