"""benchmarks/gpu_suite.py on the CPU: its plan, its refusals, the record it writes after every step (failures and
timeouts included), and the new options of the scripts it runs (compare_marian.py, loss_curves.py) at tiny sizes."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from runs import BENCHMARKS, benchmark

compare_marian, gpu_suite, loss_curves = (benchmark(name) for name in ("compare_marian", "gpu_suite", "loss_curves"))

ROOT = BENCHMARKS.parent
HEADER = {
    "schema": gpu_suite.SCHEMA,
    "environment": {
        "machine": {"cpu_model": "Fake CPU", "processor": "x86_64", "cores": 2, "gpu": "Fake GPU 80GB"},
        "python": "3",
        "torch": torch.__version__,
        "transformers": "5.23.0",
        "commit": "abc",
        "date": "2026-11-25T01:00:00+00:00",
    },
    "transformers_meets_pin": True,
}


def suite(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_suite", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_the_suite_s_header_is_the_benchmarks_environment_with_its_commit():
    header = gpu_suite.suite_header("abc")
    assert header["schema"] == gpu_suite.SCHEMA and set(header["environment"]) == set(HEADER["environment"])
    assert header["environment"]["commit"] == "abc" and header["environment"]["torch"] == torch.__version__
    assert header["transformers_meets_pin"] in (True, False, None)


def python_step(name: str, code: str, budget_s: int = 60, kind: str = "compare") -> gpu_suite.Step:
    """A step running `code` in a fresh Python; `FIGURES` in it is the path of its figures file."""
    code = "import json, sys, time, pathlib\nFIGURES = pathlib.Path(sys.argv[1])\n" + textwrap.dedent(code)
    return gpu_suite.Step(name, f"fake {name}", budget_s, (gpu_suite.PYTHON, "-c", code, gpu_suite.JSON), kind)


def test_dry_run_plans_every_step_within_25_minutes():
    result = suite("--dry-run")
    assert result.returncode == 0, result.stderr
    for step in gpu_suite.STEPS:
        assert step.name in result.stdout
        assert " ".join(gpu_suite.command_line(step)[1:]) in result.stdout
    total = sum(step.budget_s for step in gpu_suite.STEPS)
    assert f"total: {total} s" in result.stdout
    assert total <= 25 * 60
    assert {step.kind for step in gpu_suite.STEPS} == {"pytest", "compare", "curves"}


def test_dry_run_marks_steps_past_a_smaller_budget():
    result = suite("--dry-run", "--budget-minutes", "5")
    assert result.returncode == 0
    cut = [line.split()[0] for line in result.stdout.splitlines() if "past the suite's budget" in line]
    within, used = [], 0
    for step in gpu_suite.STEPS:
        used += step.budget_s
        if used <= 300:
            within.append(step.name)
    assert cut == [step.name for step in gpu_suite.STEPS if step.name not in within] and within and cut


def test_only_with_an_unknown_step_is_refused_in_one_line():
    result = suite("--only", "decode,decode-typo", "--dry-run")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "unknown step(s) decode-typo" in result.stderr and "cuda-tests" in result.stderr


def test_only_keeps_the_suites_order():
    chosen = gpu_suite.select(gpu_suite.STEPS, "decode, cuda-tests")
    assert [step.name for step in chosen] == ["cuda-tests", "decode"]
    with pytest.raises(ValueError, match="unknown step"):
        gpu_suite.select(gpu_suite.STEPS, ",")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_the_suite_refuses_in_one_line(tmp_path):
    result = suite("--out", str(tmp_path))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "no CUDA device" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_record_is_written_after_every_step_and_failures_do_not_stop_the_suite(tmp_path):
    record_path = tmp_path / "2026-11-25-gpu-suite-fake-gpu-80gb.json"
    steps = [
        python_step("first", """FIGURES.write_text(json.dumps({"results": {"hf_vanilla": {"tok_s": 2.0}}}))"""),
        # Exits 0 only if the record on disk already holds the first step, and not yet this one.
        python_step(
            "reads-record",
            f"""
            steps = json.loads(pathlib.Path({str(record_path)!r}).read_text())["steps"]
            sys.exit(0 if list(steps) == ["first"] and steps["first"]["status"] == "ok" else 3)
            """,
        ),
        python_step("fails", "print('boom'); sys.exit(4)"),
        python_step(
            "hangs",
            """
            FIGURES.write_text(json.dumps({"results": {"hf_vanilla": {"tok_s": 1.0}}}))
            print('partial', flush=True); time.sleep(120)
            """,
            budget_s=3,
        ),
        python_step("after", "print('still running')", kind="curves"),
    ]
    record = gpu_suite.run_suite(steps, tmp_path, 300, HEADER)
    assert json.loads(record_path.read_text()) == record
    assert record["finished"] is True and record["budget_s"] == 300
    assert {key: record[key] for key in HEADER} == HEADER
    entries = record["steps"]
    assert list(entries) == ["first", "reads-record", "fails", "hangs", "after"]
    assert [entries[name]["status"] for name in entries] == ["ok", "ok", "failed", "timed out", "ok"]
    assert entries["first"]["figures"] == {"hf_vanilla": {"tok_s": 2.0}}
    assert entries["fails"]["returncode"] == 4 and "boom" in entries["fails"]["log_tail"]
    assert entries["hangs"]["figures"] == {"hf_vanilla": {"tok_s": 1.0}} and "partial" in entries["hangs"]["log_tail"]
    assert 3 <= entries["hangs"]["seconds"] < 30
    for entry in entries.values():
        assert {"what", "command", "budget_s", "status", "returncode", "seconds", "figures", "log_tail"} <= set(entry)
        assert entry["command"][0] == sys.executable
    log = record_path.with_suffix(".log").read_text()
    assert "boom" in log and "still running" in log and "===== hangs: timed out" in log


def test_the_page_renders_the_records_the_suite_writes_and_never_mixes_two_hosts(tmp_path, monkeypatch):
    """`render_tables` reads the record `run_suite` writes (schema 2: the header under `environment`) and, of two hosts
    with one GPU, tables a step that both ran from the latest host only, and a step only the former ran under that
    host's own heading: small-batch GPU figures move with the host's speed."""
    render_tables = benchmark("render_tables")
    flags = ("--batch-size", "256", "--length", "32", "--train-steps", "10", "--loss-chunk-tokens", "4096")

    def training(tokens_per_s: float, marian: float | None = None) -> gpu_suite.Step:
        figures = {"train_tokens_per_s": tokens_per_s, "mfu": 0.1, "peak_memory_mib": 100.0}
        models = {"hf_vanilla": figures, "hf_vanilla chunked": figures}
        models["MarianMTModel"] = figures | {"train_tokens_per_s": marian or tokens_per_s}
        step = python_step("train-base", f"FIGURES.write_text(json.dumps({{'results': {models!r}}}))")
        return gpu_suite.Step(step.name, step.what, step.budget_s, (*step.command, *flags), step.kind)

    schema_1 = {"schema": 1, "device": "Fake GPU 80GB", "torch": "2.0", "date": "2026-11-24T00:00:00+00:00"}
    former = gpu_suite.run_suite([training(7.0)], tmp_path / "o", 60, HEADER)["steps"]["train-base"]
    old = schema_1 | {"steps": {"train-base": former, "train-big": former}}
    (tmp_path / "2026-11-24-gpu-suite-fake-gpu-80gb.json").write_text(json.dumps(old))
    host = {**HEADER["environment"]["machine"], "boot_id": "c0f73818-d3ab"}
    header = HEADER | {"environment": HEADER["environment"] | {"machine": host}}
    gpu_suite.run_suite([training(123456.0)], tmp_path, 60, header)
    monkeypatch.setattr(render_tables, "RESULTS", tmp_path)
    page = render_tables.gpu_block()
    assert page.startswith("Fake GPU 80GB on Fake CPU (2-core x86_64), boot c0f73818, 2026-11-25,")
    newer, former = page.split("Fake GPU 80GB, 2026-11-24,")
    assert "`2026-11-25-gpu-suite-fake-gpu-80gb.json` (torch" in newer and "big, eager" not in newer
    assert "| base, eager | 123,456 | 123,456 | 123,456 | 1.00 |" in newer
    assert "`2026-11-24-gpu-suite-fake-gpu-80gb.json` (torch 2.0): train-big." in " ".join(former.split())
    assert "| big, eager | 7 | 7 | 7 | 1.00 |" in former and "base, eager" not in former
    # A repeat of the step on the same host: the latest figures, and the ratio's range over both runs.
    gpu_suite.run_suite([training(100000.0, marian=200000.0)], tmp_path, 60, header)
    page = render_tables.gpu_block()
    assert "| base, eager | 100,000 | 100,000 | 200,000 | 0.50 (0.50-1.00 over 2 runs) |" in page
    assert "`2026-11-25-gpu-suite-fake-gpu-80gb-2.json` (torch" in page


def test_steps_past_the_suites_budget_are_skipped_not_run(tmp_path):
    marker = tmp_path / "ran"
    step = python_step("would-run", f"pathlib.Path({str(marker)!r}).write_text('x')")
    record = gpu_suite.run_suite([step], tmp_path / "out", gpu_suite.MIN_STEP_S - 1, HEADER)
    assert record["steps"]["would-run"]["status"] == "skipped"
    assert not marker.exists()
    again = gpu_suite.run_suite([step], tmp_path / "out", gpu_suite.MIN_STEP_S - 1, HEADER)
    names = sorted(path.name for path in (tmp_path / "out").iterdir())
    stem = "2026-11-25-gpu-suite-fake-gpu-80gb"
    assert names == [f"{stem}-2.json", f"{stem}-2.log", f"{stem}.json", f"{stem}.log"]  # a second run keeps the first
    assert json.loads((tmp_path / "out" / f"{stem}-2.json").read_text()) == again


def test_pytest_counts_come_from_its_junit_report(tmp_path):
    (tmp_path / "test_three.py").write_text(
        "import pytest\ndef test_ok(): pass\ndef test_bad(): assert 1 == 2\n"
        "@pytest.mark.skip(reason='no')\ndef test_skipped(): pass\n"
    )
    # --rootdir: else pytest roots the names at the common ancestor of the file and the working directory (the clone).
    command = (gpu_suite.PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path))
    command = (*command, str(tmp_path / "test_three.py"))
    step = gpu_suite.Step("tests", "three tests", 60, (*command, "--junitxml", gpu_suite.JSON), "pytest")
    entry = gpu_suite.run_suite([step], tmp_path / "out", 120, HEADER)["steps"]["tests"]
    assert entry["status"] == "failed"
    figures = entry["figures"]
    assert (figures["tests"], figures["passed"], figures["failures"], figures["skipped"]) == (3, 1, 1, 1)
    assert figures["failing"] == ["test_three::test_bad"]


def test_every_step_command_parses_in_its_script():
    """A typo in a step's flags would cost a GPU session a step: each command is parsed by its script here."""
    for step in gpu_suite.STEPS:
        argv = gpu_suite.command_line(step)
        if step.kind == "compare":
            assert argv[1:3] == ["-m", "benchmarks.compare_marian"]
            args = compare_marian.parse_args(argv[3:])
            assert args.device == "cuda" and args.dtype == "bfloat16" and args.json == "FIGURES_FILE"
        elif step.kind == "curves":
            assert argv[1:3] == ["-m", "benchmarks.loss_curves"]
            assert loss_curves.parse_args(argv[3:]).steps == 200
        else:
            assert (BENCHMARKS.parent / argv[argv.index("pytest") + 4]).is_file()


def test_compare_marian_refuses_bad_options(capsys):
    cases = {
        ("--parts", "train,typo"): "unknown part(s) ['typo']",
        ("--decode-compile-backend", "aot_eager"): "needs --cache static",
        ("--loss-chunk-tokens", "-1"): "must not be negative",
    }
    for argv, message in cases.items():
        with pytest.raises(SystemExit):
            compare_marian.parse_args(list(argv))
        assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_compare_marian_chunked_column_and_static_cache_on_cpu(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, "-m", "benchmarks.compare_marian", "--model-size", "tiny", "--vocab-size", "300"]
    command += ["--batch-size", "4", "--length", "8", "--train-steps", "1", "--new-tokens", "3", "--repeats", "1"]
    command += ["--parts", "train,decode", "--loss-chunk-tokens", "8", "--cache", "static", "--skip-fsmt"]
    run = subprocess.run([*command, "--json", str(out)], cwd=ROOT, check=True, capture_output=True, timeout=120)
    assert "may be ignored" not in run.stderr.decode()  # no beam-only flag on a greedy call
    record = json.loads(out.read_text())
    assert record["environment"]["torch"] == torch.__version__ and "torch" not in record["setting"]
    results = record["results"]
    assert list(results) == ["hf_vanilla", "MarianMTModel", compare_marian.CHUNKED]
    chunked = results[compare_marian.CHUNKED]
    assert chunked["train_tokens_per_s"] > 0 and not any(key.startswith("generate") for key in chunked)
    for name in ("hf_vanilla", "MarianMTModel"):
        for setting in ("greedy_b1", "beam4_b1", "greedy_b16", "beam4_b16"):
            assert results[name][f"generate_{setting}_tok_s"] > 0
        assert results[name]["decode_compiled_graphs"] == 0  # no compilation on the CPU unless a backend is forced


def test_the_chunked_column_trains_with_chunks():
    model = compare_marian.build_model(compare_marian.CHUNKED, "tiny", 300, 8).train()
    ids = compare_marian.english_batches(8, 2, 300)
    output = model(input_ids=ids, labels=ids.roll(1, 0))
    assert model.config.loss_chunk_tokens == 8 and output.logits is None and output.loss > 0


def test_compiled_training_has_no_graph_breaks():
    """Under torch.compile (aot_eager here; inductor on a GPU) the training step is one graph: a graph break would
    cost the compiled GPU figures their point."""
    model = compare_marian.vanilla_model("tiny", 300)
    source = compare_marian.english_batches(8, 2, 300)
    figures = compare_marian.training_speed(
        model,
        source,
        source.roll(1, 0),
        compare_marian.Runtime(torch.device("cpu"), torch.float32, "aot_eager"),
        1,
        True,
    )
    assert figures["compiled_graphs"] >= 1 and figures["graph_breaks"] == 0
    assert figures["train_tokens_per_s"] > 0


def test_synthetic_batches_are_a_permuted_reversal():
    batches = loss_curves.synthetic_batches(3, 5, 40, seed=0, lengths=(2, 9))
    assert all(
        torch.equal(a, b)
        for x, y in zip(batches, loss_curves.synthetic_batches(3, 5, 40, 0, (2, 9)))
        for a, b in zip(x, y)
    )
    mapping = {}
    for input_ids, attention_mask, labels in batches:
        assert torch.equal(attention_mask, (input_ids != loss_curves.PAD).long())
        for source, target in zip(input_ids.tolist(), labels.tolist()):
            size = source.index(loss_curves.PAD) if loss_curves.PAD in source else len(source)
            assert 2 <= size <= 9 and min(source[:size]) >= 3
            assert target[size] == loss_curves.EOS and set(target[size + 1 :]) <= {-100}
            for position in range(size):
                token, image = source[position], target[size - 1 - position]
                assert mapping.setdefault(token, image) == image and image >= 3
    assert len(set(mapping.values())) == len(mapping)  # a permutation: no two tokens share an image
    assert len(mapping) > 5  # varied sources


def test_loss_curves_runs_fp32_and_bf16_on_the_same_batches(tmp_path):
    out = tmp_path / "curves.json"
    record = loss_curves.main(
        ["--preset", "tiny", "--vocab-size", "200", "--steps", "3", "--batch-size", "4", "--max-length", "8"]
        + ["--warmup", "10", "--json", str(out)]
    )
    assert json.loads(out.read_text()) == record
    fp32, bf16 = record["curves"]["fp32"], record["curves"]["bf16"]
    assert len(fp32) == len(bf16) == 3 and record["summary"]["finite"]
    # Update 1: the same weights and batch; bf16 autocast changes the loss by a few bf16 roundings (2^-8 each),
    # relative to its size, and changes it (the autocast is on).
    assert 0 < abs(bf16[0] - fp32[0]) < 2**-6 * fp32[0]
