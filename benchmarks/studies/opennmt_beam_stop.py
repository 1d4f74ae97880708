"""What OpenNMT-py's beam stop is worth in its decoding speed, beside hf_vanilla's decoding on the same machine at the
same time. OpenNMT-py 3.5.1's beam search (`onmt/translate/beam_search.py`, `beams_non_finished`) ends a sentence at
a step where its top beam finishes once `-n_best` hypotheses are kept (under the benchmark's `-ratio 0`); hf_vanilla's,
as transformers' with `early_stopping=True`, once `num_beams` (4) hypotheses have finished. A translation run's own
onmt_translate command, as its record on this machine (this boot) has it, decodes the test split again with
`-n_best 1` (the run's) and with `-n_best 4` (it then waits for four hypotheses, as hf_vanilla does), and the
hf_vanilla run of the same seed decodes it as the runner times it (`recipe_decoding`), the three in turn, the first
rotating, `--repeats` times each (one untimed hf_vanilla decode first, as its model loads).

    python -m benchmarks.peers --task translation --system opennmt-py --seed 1     # the runs it decodes
    python -m benchmarks.peers --task translation --system hf_vanilla --seed 1
    python -m benchmarks.studies.opennmt_beam_stop --seed 1 [--repeats 5]

Figures: sentences a second as the runner reads them (OpenNMT-py's -report_time through `decoding_speed`; hf_vanilla's
sentences over the decode's wall seconds), min / median / max over the repeats and each median's ratio to
hf_vanilla's; the sacreBLEU of each sentence's first (best) OpenNMT-py hypothesis; the record,
`benchmarks/results/decoding-together-opennmt-py-seedN-DATE.json`, which `render_tables` sets beside the verdict
table's decoding speeds. Alone on an idle machine: each decode takes seconds.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from hf_vanilla.errors import user_exit
from hf_vanilla.tokenization import load_tokenizer

from benchmarks.environment import boot_id
from benchmarks.environment import environment as environment_header
from benchmarks.flag_checks import require_at_least
from benchmarks.peers.common.jobs import environment
from benchmarks.peers.common.pieces import text_from_pieces
from benchmarks.peers.comparison import work_folder
from benchmarks.peers.opennmt.runner import decoding_speed, read_hypotheses
from benchmarks.peers.recipe.decoding import recipe_decoding, sentences_per_second
from benchmarks.peers.translation import score_translation
from benchmarks.record_paths import unused_stem

SYSTEM = "opennmt-py"
PROGRAM = "opennmt_beam_stop"
RESULTS = Path(__file__).resolve().parents[1] / "results"
N_BEST = (1, 4)
LABELS = {"n_best 1": "as run", "n_best 4": "keeping four hypotheses, as hf_vanilla"}
RECORD_PREFIX = "decoding-together-"  # not "peers-": a study's record is no run of the verdict table


def recorded_command(seed: int, results: Path = RESULTS, boot: str | None = None) -> list[str]:
    """The onmt_translate command of this seed's translation record made on this boot (`boot`, else the running one):
    the speeds it is set beside are that record's."""
    boot = boot or boot_id()
    for path in sorted(results.glob(f"peers-translation-{SYSTEM}-seed{seed}-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("environment", {}).get("machine", {}).get("boot_id") == boot:
            return next(c for c in record["peer_commands"] if Path(c.split()[0]).name == "onmt_translate").split()
    raise user_exit(PROGRAM, f"no {SYSTEM} translation record of seed {seed} on this boot ({boot}): run it first")


def with_n_best(command: list[str], output: Path, n_best: int) -> list[str]:
    """`command` writing to `output` and keeping `n_best` hypotheses a sentence."""
    command = list(command)
    command[command.index("-output") + 1] = str(output)
    return [*command, "-n_best", str(n_best)]


def first_hypotheses(lines: list[str], n_best: int) -> list[str]:
    """Each sentence's first (best) line of onmt_translate's output, which writes `n_best` lines a sentence."""
    if len(lines) % n_best:
        raise ValueError(f"{len(lines)} output lines are not {n_best} a sentence")
    return lines[::n_best]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="The translation run's seed (its record on this boot).")
    parser.add_argument("--repeats", type=int, default=5, help="Timed decodes of each.")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="Where the record is written.")
    args = parser.parse_args(argv)
    require_at_least(parser, args, {"repeats": 1})
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    command = recorded_command(args.seed)
    folders = {
        system: work_folder(argparse.Namespace(task="translation", system=system, seed=args.seed, work_dir=None), {})
        for system in (SYSTEM, "hf_vanilla")
    }
    run, final = folders[SYSTEM], folders["hf_vanilla"] / "run" / "final"
    model = Path(command[command.index("-model") + 1])
    for needed, why in ((model, "the record's model"), (final / "config.json", "the hf_vanilla run's final model")):
        if not needed.is_file():
            raise user_exit(PROGRAM, f"{why} {needed} is not there: run the seed again on this machine")
    tokenizer, env = load_tokenizer(run / "tokenizer"), environment(None)
    sources, decode_hf = recipe_decoding(final, None)
    decode_hf()  # warm-up
    speeds: dict[str, list[float]] = {name: [] for name in (*(f"n_best {n}" for n in N_BEST), "hf_vanilla")}
    quality: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=PROGRAM) as work:
        for repeat in range(args.repeats):
            names = list(speeds)
            for name in names[repeat % 3 :] + names[: repeat % 3]:
                if name == "hf_vanilla":
                    speeds[name].append(sentences_per_second(len(sources), decode_hf))
                    continue
                n_best, output = int(name.split()[1]), Path(work) / f"test.{name.replace(' ', '')}.hyp"
                done = subprocess.run(with_n_best(command, output, n_best), capture_output=True, text=True, env=env)
                if done.returncode:
                    raise RuntimeError(f"onmt_translate failed ({done.returncode}):\n{done.stderr[-2000:]}")
                lines = first_hypotheses(read_hypotheses(output, len(sources) * n_best), n_best)
                speeds[name].append(decoding_speed(done.stdout + done.stderr, len(lines)))
                text = [text_from_pieces(line, tokenizer) for line in lines]
                quality[name] = score_translation(text, run / "data")["quality"]["value"]
    middle = {name: statistics.median(values) for name, values in speeds.items()}
    figures = {
        name: {"sentences_per_s": [min(values), middle[name], max(values)],
               "median_vs_hf_vanilla": round(middle[name] / middle["hf_vanilla"], 3), "sacrebleu": quality.get(name)}
        for name, values in speeds.items()
    }  # fmt: skip
    record = {"study": PROGRAM, "task": "translation", "system": SYSTEM, "seed": args.seed, "repeats": args.repeats,
              "sentences": len(sources), "figures": figures, "as_run": "n_best 1", "labels": LABELS,
              "peer_command": " ".join(command), "environment": environment_header()}  # fmt: skip
    path = write_record(record, args.results_dir)
    json.dump(record, sys.stdout, indent=1)
    print(f"\nrecord: {path}")
    return figures


def write_record(record: dict, results: Path) -> Path:
    """`record` as RESULTS/decoding-together-SYSTEM-seedN-DATE.json (-2, -3, ... when taken: a record is never
    rewritten); `render_tables` sets its ratios beside the verdict table's decoding speeds."""
    stem = f"{RECORD_PREFIX}{record['system']}-seed{record['seed']}-{record['environment']['date'][:10]}"
    path = results / f"{unused_stem(results, stem)}.json"
    results.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    main()
