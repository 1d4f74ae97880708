"""The README, docs/*.md and the peers' manual: every relative link and image resolves (file and heading anchor),
and so does every `page.md#anchor` that code, cards or templates name; images live under docs/images; the README
stays one page, docs/benchmarks.md a five-minute reference, and docs/experiments.md opens with what stands."""

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED_PAGES = [*PAGES, ROOT / "benchmarks" / "peers" / "README.md"]  # every page whose links are checked
README_MAX_LINES = 170  # one page a newcomer reads in five minutes; reference material belongs in docs/
BENCHMARKS_MAX_LINES = 300  # a reference read in five minutes; the lab narrative belongs in docs/experiments.md
# Where code, cards and templates name a page's heading (`docs/PAGE.md#heading`).
NAMING_ANCHORS = ["hf_vanilla", "model_cards", "recipes", "benchmarks", "tests"]
ANCHOR = re.compile(r"\b([\w-]+\.md)#([\w-]+)")

# [text](target) and ![alt](target); the target may carry a "title" after a space.
LINK = re.compile(r"(!?)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where brackets are code, not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown page: lower case, punctuation dropped, spaces as hyphens,
    a repeated heading numbered -1, -2, ..."""
    anchors: set[str] = set()
    for heading in re.findall(
        r"^#{1,6}\s+(.+?)\s*#*\s*$", re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.M), re.M
    ):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def broken_links(page: Path) -> list[str]:
    """Each relative link or image of `page` that does not resolve, as 'target: why'."""
    problems = []
    for bang, target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... : not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            problems.append(f"{target}: {os.path.relpath(resolved, ROOT)} does not exist")
            continue
        if bang and not resolved.is_relative_to(ROOT / "docs" / "images"):
            problems.append(f"{target}: images belong under docs/images")
        if anchor and resolved.suffix == ".md" and anchor not in github_anchors(resolved.read_text()):
            problems.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    return problems


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_resolves(page):
    assert broken_links(page) == []


def test_every_anchor_that_code_cards_or_templates_name_resolves():
    """A `docs/PAGE.md#anchor` in a docstring, comment, card or template is a link too: a renamed heading breaks it."""
    pages = {page.name: github_anchors(page.read_text()) for page in PAGES}
    broken = []
    for folder in NAMING_ANCHORS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".md", ".j2", ".txt"} or "results" in path.parts or not path.is_file():
                continue
            for name, anchor in ANCHOR.findall(path.read_text(errors="replace")):
                if name in pages and anchor not in pages[name]:
                    broken.append(f"{path.relative_to(ROOT)}: {name}#{anchor}")
    assert broken == []


def test_the_experiments_log_opens_with_what_stands_each_line_linked_to_its_entry():
    """docs/experiments.md's first section is "What stands": one conclusion a line, each linked to the entry of the
    page that decided it (the link check above proves the anchors); every "Superseded by" note links an entry too."""
    text = (ROOT / "docs" / "experiments.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)
    assert sections[1].startswith("What stands\n")
    conclusions = re.findall(r"^- (.*(?:\n  .*)*)", sections[1], flags=re.M)  # a bullet and its continued lines
    assert len(conclusions) >= 10
    assert [line for line in conclusions if not re.search(r"\]\(#2026-\d\d-\d\d-[\w-]+\)", line)] == []
    notes = re.findall(r"^Superseded (?:in part )?by .*$", text, flags=re.M)
    assert notes and [note for note in notes if not re.search(r"\]\(#2026-[\w-]+\)", note)] == []


def test_the_benchmarks_page_is_a_five_minute_reference():
    assert len((ROOT / "docs" / "benchmarks.md").read_text().splitlines()) <= BENCHMARKS_MAX_LINES


def test_the_readme_links_every_page_of_docs():
    linked = {(ROOT / t.partition("#")[0]).resolve() for _, t in LINK.findall(prose((ROOT / "README.md").read_text()))}
    assert [p.name for p in PAGES[1:] if p not in linked] == []


def test_the_readme_is_one_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


def test_a_broken_link_an_unknown_anchor_and_a_stray_image_are_reported(tmp_path, monkeypatch):
    tmp_path = tmp_path.resolve()
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "docs" / "images").mkdir(parents=True)
    (tmp_path / "docs" / "images" / "a.png").write_bytes(b"")
    (tmp_path / "b.png").write_bytes(b"")
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## A section, with (punctuation)\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[fine](docs/other.md#a-section-with-punctuation) ![fine](docs/images/a.png) [web](https://example.org)\n"
        "[gone](docs/missing.md) [bad anchor](docs/other.md#nowhere) ![stray](b.png) `[code](nowhere.md)`\n"
        "```\n[in a code block](nowhere.md)\n```\n"
    )
    assert broken_links(page) == [
        "docs/missing.md: docs/missing.md does not exist",
        "docs/other.md#nowhere: no heading #nowhere in docs/other.md",
        "b.png: images belong under docs/images",
    ]


def test_the_docs_name_every_size_preset_subcommand_and_tab_the_code_has():
    """Read from the code: every model size in docs/model.md, every recipe preset (tests' `tiny` aside) in the
    README's line of that recipe, every subcommand in the README's command line block, every app tab in docs/app.md."""
    from hf_vanilla import SIZES
    from hf_vanilla.training.presets import PARSING_PRESETS, SUMMARIZATION_PRESETS, WMT_PRESETS
    from hf_vanilla_cli import build_parser

    model_page, readme = (ROOT / "docs" / "model.md").read_text(), (ROOT / "README.md").read_text()
    assert [name for name in SIZES if f"`{name}`" not in model_page] == []
    for recipe, presets in (
        ("wmt_ende", WMT_PRESETS),
        ("ptb_parse", PARSING_PRESETS),
        ("summarize", SUMMARIZATION_PRESETS),
    ):
        (line,) = [
            line
            for line in readme.splitlines()
            if re.match(rf"accelerate launch .*recipes/{recipe}\.py --preset \{{", line)
        ]
        listed = set(re.search(r"--preset \{([^}]*)\}", line).group(1).split(","))
        assert listed == set(presets) - {"tiny"}, recipe
    commands = build_parser()._subparsers._group_actions[0].choices
    block = readme.split("## Command line")[1].split("```")[1]
    assert [name for name in commands if f"hf-vanilla {name} " not in block] == []
    app_page = (ROOT / "docs" / "app.md").read_text()
    pytest.importorskip("gradio")
    from hf_vanilla.app import TASKS

    assert [label for label, _ in TASKS.values() if f"**{label}**" not in app_page] == []


def test_every_figure_of_the_benchmarks_page_is_rendered_from_its_records():
    """docs/benchmarks.md's measured figures, and the README's summary of its verdict tables, sit in blocks that
    `benchmarks/render_tables.py` rewrites from the records under benchmarks/results/: each page equals its rendering,
    every block the script knows for a page is on it, and no table stands outside a block (the page once showed
    figures that no record held: 601.5 tokens/s, 49.2)."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    assert set(render_tables.PAGES) == {render_tables.PAGE, ROOT / "README.md"}
    for path, blocks in render_tables.PAGES.items():
        page = path.read_text()
        assert render_tables.render(page, blocks) == page, "run python benchmarks/render_tables.py"
        assert sorted(name for _, name, _, _ in render_tables.BLOCK.findall(page)) == sorted(blocks), path.name
        outside = render_tables.BLOCK.sub("", page)
        assert [line for line in outside.splitlines() if line.startswith("|")] == [], path.name


def test_the_verdict_opens_the_benchmarks_page_and_the_readme_shows_it_on_its_second_screen():
    """Issue 63: docs/benchmarks.md's first section is the verdict, one table a task, each task's explanations
    linked to the peers' manual rather than written out; the README's summary follows its set-up, before its usage."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    sections = re.split(r"^## ", page, flags=re.M)
    assert sections[1].startswith("Side by side with fairseq, OpenNMT-py, Sockeye\n")
    tasks = re.split(r"^### ", sections[1], flags=re.M)[1:]
    assert [task.splitlines()[0] for task in tasks] == ["Translation", "Summarization", "Parsing"]
    for task in tasks:  # a caption, its block, nothing after it: the explanations are the manual's
        manual = "../benchmarks/peers/README.md"  # each task's anchor there: the link check above proves it
        assert f"{manual}#why-the-{task.splitlines()[0].lower()}-figures-differ" in task
        assert task.rstrip().endswith("<!-- /record -->")
    readme = (ROOT / "README.md").read_text()
    headings = re.findall(r"^## (.+)$", readme, flags=re.M)
    assert headings[:3] == ["Set-up", "Beside fairseq, OpenNMT-py and Sockeye", "Usage"]
    assert "<!-- record: verdict-readme -->" in readme.split("## Beside fairseq")[1].split("## Usage")[0]


def test_every_record_names_its_machine_through_one_function():
    """`render_tables.machine` reads every header a record has had (the peers' `device` with or without its CPU model,
    a device string, a benchmark's `setting(s)`, `benchmarks/environment.py`'s `environment`) into one name, so the
    page needs no table of its own for records that predate a field."""
    from runs import benchmark

    render_tables = benchmark("render_tables")
    records = {path.name: json.loads(path.read_text()) for path in render_tables.RESULTS.glob("*.json")}
    names = {name: render_tables.machine(run) for name, run in records.items()}
    assert [name for name, machine in names.items() if not machine or "None" in machine] == []
    for name, run in records.items():
        if name.startswith("peers-"):  # the CPU model where the record names it, else one name for all that do not
            named = run.get("environment", {}).get("machine", run["device"]).get("cpu_model")  # header, else device
            assert names[name].startswith(named or "2-core x86_64 (model not recorded)")
    header = {"machine": {"cpu_model": "AMD EPYC 9654", "processor": "x86_64", "cores": 2, "gpu": None}}
    assert render_tables.machine({"environment": header}) == "AMD EPYC 9654 (2-core x86_64)"
    booted = {"machine": {**header["machine"], "boot_id": "d4efcd9a-d265-496c-97b7-b41d50de5707"}}
    assert render_tables.machine({"environment": booted}) == "AMD EPYC 9654 (2-core x86_64), boot d4efcd9a"
    assert render_tables.machine({"environment": {"machine": {**booted["machine"], "gpu": "NVIDIA H200"}}}) == (
        "NVIDIA H200 on AMD EPYC 9654 (2-core x86_64), boot d4efcd9a"  # its host: it sets small batches' speed
    )
