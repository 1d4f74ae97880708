"""docs/benchmarks.md's measured figures, rendered from the records under benchmarks/results/.

    python benchmarks/render_tables.py           # rewrite the page's record blocks from the records
    python benchmarks/render_tables.py --check   # exit 1, naming the blocks, where the page and the records differ

Each block of the page sits between `<!-- record: NAME -->` and `<!-- /record -->`; NAME is one of `BLOCKS`, which
names the record(s) it is read from. Everything between the two comments is rewritten: a figure is changed by
recording a new run (the command each block names), never by hand. tests/test_docs.py checks that the page equals
its rendering and that no table of the page stands outside a block.
"""

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
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
            f"`benchmarks/results/{MARIAN_RECORD}` (`python benchmarks/compare_marian.py --record`, {run['date']}): "
            f"{run['device']}, {setting['dtype']}, {setting['threads']} threads, torch {run['torch']}, transformers "
            f"{run['transformers']}; batch {setting['batch_size']} × {length} + {length} tokens, "
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
            f"{names} ({setting['threads']} threads, {setting['rounds']} rounds, {setting['sentences_b1']} "
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


# The peers' records (`benchmarks/peers/run.py`), in the order their table lists tasks and systems.
PEER_TASKS = ("translation", "summarization", "parsing")
PEER_METRICS = {"sacrebleu": "sacreBLEU", "rouge1": "ROUGE-1", "f1": "F1"}


def peer_records() -> list[dict]:
    """Every full peer run's record (`peers-*.json`; a `short_check` run is no figure)."""
    records = [json.loads(path.read_text()) for path in sorted(RESULTS.glob("peers-*.json"))]
    return [r for r in records if not r.get("short_check")]


def spread(values: list[float], digits: int = 1) -> str:
    """The mean of `values`, with their least and greatest where there are several: `21.3 (20.9-21.7)`."""
    mean = number(sum(values) / len(values), digits)
    return mean if len(values) == 1 else f"{mean} ({number(min(values), digits)}-{number(max(values), digits)})"


def timed(runs: list[dict], key: str, digits: int = 1, scale: float = 1.0) -> str:
    """`spread` of `key` over the runs made on an idle machine (a run beside other work times nothing)."""
    idle = [r[key] / scale for r in runs if not r.get("machine_shared")]
    return spread(idle, digits) if idle else "shared machine"


def peer_row(task: str, system: str, runs: list[dict]) -> list[str]:
    """The peers table's row of one task and system over its seeds' runs."""
    metric = PEER_METRICS.get(runs[0]["quality"]["metric"], runs[0]["quality"]["metric"])
    return [
        task,
        system,
        ", ".join(str(r["seed"]) for r in runs),
        f"{metric} {spread([r['quality']['value'] for r in runs], 2)}",
        timed(runs, "train_tokens_per_s"),
        timed(runs, "wall_s", scale=60),
        timed(runs, "decode_sentences_per_s", 2),
        number(max(r["peak_rss_mb"] for r in runs), 0),
    ]


def machine(record: dict) -> str:
    """The machine a peer record ran on, as the peers tables name it: its CPU model (where recorded), architecture
    and threads."""
    device = record["device"]
    model = device.get("cpu_model") or "a CPU whose model the record does not name"
    return f"{model}, {device['processor']}, {device['threads'] or 'torch default'} threads of {device['cpu_count']}"


def peer_rows(records: list[dict]) -> list[list[str]]:
    """One row a task and system (`peer_row`), hf_vanilla's first in each task."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in sorted(
        records, key=lambda r: (PEER_TASKS.index(r["task"]), not r["system"].startswith("hf_vanilla"), r["system"])
    ):
        scale = r.get("resolved_settings", {}).get("peer_lr_scale")
        groups.setdefault((r["task"], r["system"] + (f" (lr_scale {scale:g})" if scale else "")), []).append(r)
    return [peer_row(task, system, runs) for (task, system), runs in groups.items()]


def peers_block() -> str:
    """benchmarks/peers/run.py: each task's systems on the same data, pieces and budget, over their seeds; one table a
    machine (`machine`), the one with the most runs first, as speeds compare on one machine only."""
    records = peer_records()
    if not records:
        return wrapped("No full run is recorded yet.")
    machines: dict[str, list[dict]] = {}
    for r in records:
        machines.setdefault(machine(r), []).append(r)
    header = ["task", "system", "seeds", "quality: mean (min-max)", "training tokens/s", "wall (min)",
              "decoding sentences/s", "peak RSS (MiB)"]  # fmt: skip
    text = wrapped(
        f"`benchmarks/results/peers-*.json` ({len(records)} runs; each run's command and settings table are in its "
        "record), one table a machine: speeds compare within a table only. Quality on the demo's test split with "
        "this project's scorers; training tokens/s as each record's `train_tokens_per_s_basis` says; decoding at the "
        "demo's beam over the test split; mean over seeds (least-greatest); the speeds and wall time of idle runs "
        "only (a record's `machine_shared`: its 15-minute load average above its own threads)."
    )
    for name, runs in sorted(machines.items(), key=lambda item: -len(item[1])):
        text += "\n" + wrapped(f"On {name} ({len(runs)} runs):") + "\n" + table(header, peer_rows(runs))
    return text


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
    """Each GPU's suite records (`*-gpu-suite-*.json`) and the latest finished run of each step: the records that
    give a step, by start time, each named with its commit and the steps it gives."""
    suites: dict[str, tuple[list[str], dict[str, dict]]] = {}
    runs = [(json.loads(path.read_text()), path.name) for path in RESULTS.glob("*-gpu-suite-*.json")]
    for run, name in sorted(runs, key=lambda pair: pair[0]["date"]):
        steps = suites.setdefault(run["device"], ([], {}))[1]
        where = {"record": name, "commit": run["commit"][:7], "torch": run["torch"], "date": run["date"][:10]}
        steps.update({step: value | where for step, value in run["steps"].items() if value["status"] == "ok"})
    for names, steps in suites.values():
        for record in dict.fromkeys(step["record"] for step in steps.values()):
            given = [name for name, step in steps.items() if step["record"] == record]
            first = steps[given[0]]
            names.append(f"`{record}` (commit {first['commit']}, torch {first['torch']}): {', '.join(given)}")
    return suites


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
                number(ours["train_tokens_per_s"] / marian["train_tokens_per_s"], 2),
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
            cells += [number(ours), number(marian), number(ours / marian, 2)]
        rows.append(cells)
    return header, rows


def gpu_notes(steps: dict[str, dict]) -> list[str]:
    """The suite's figures that are sentences, not tables: the CUDA tests, the static cache's graphs, the curves."""
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
    if "loss-curves" in steps:
        summary, setting = steps["loss-curves"]["figures"]["summary"], steps["loss-curves"]["figures"]["setting"]
        notes.append(
            f"`benchmarks/loss_curves.py`: {setting['steps']} updates of {setting['model_size']}, batch "
            f"{setting['batch_size']}, the same seed and batches in fp32 and in bf16 autocast: the last 10 updates' "
            f"mean loss {summary['fp32_last10_mean']} and {summary['bf16_last10_mean']} (relative difference "
            f"{summary['last10_relative_difference']}), the largest difference at one update "
            f"{summary['max_abs_difference']}, every loss finite: {summary['finite']}."
        )
    return notes


def gpu_block() -> str:
    """benchmarks/gpu_suite.py on a lent GPU: CUDA tests, bf16 training and decoding beside Marian, loss curves."""
    parts = []
    for device, (names, steps) in gpu_suites().items():
        dates = ", ".join(sorted({step["date"] for step in steps.values()}))
        parts.append(
            wrapped(
                f"{device}, {dates}, the latest run of each step: {'; '.join(names)}. Each figure is one run; "
                "the records before a step's latest hold its earlier runs."
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


BLOCKS: dict[str, Callable[[], str]] = {
    "compare-marian-cpu": marian_block,
    "engines-speed": engine_speed_block,
    "engines-bleu": engine_bleu_block,
    "peers": peers_block,
    "gpu-suite": gpu_block,
}


def render(page: str) -> str:
    """`page` with every record block rewritten from its records; a block of an unknown NAME is a KeyError."""
    return BLOCK.sub(lambda m: m.group(1) + BLOCKS[m.group(2)]() + m.group(4), page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 where the page differs from its records.")
    args = parser.parse_args()
    page = PAGE.read_text()
    rendered = render(page)
    if args.check:
        stale = [
            name
            for (_, name, body, _), (_, _, new, _) in zip(BLOCK.findall(page), BLOCK.findall(rendered))
            if body != new
        ]
        if stale:
            sys.exit(f"render_tables: {PAGE.name} differs from its records in: {', '.join(stale)}")
        return
    PAGE.write_text(rendered)
    print(f"rendered {len(BLOCK.findall(page))} blocks of {PAGE}")


if __name__ == "__main__":
    main()
