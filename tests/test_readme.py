"""Every Python snippet of the README and of docs/*.md runs, against a model folder made by a real (short) recipe
run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)


def test_readme_python_snippets_run(wmt_run, tmp_path, monkeypatch):
    blocks = python_blocks(README)
    assert len(blocks) >= 3 and any("Seq2SeqTrainer" in b for b in blocks) and any("pipeline" in b for b in blocks)
    assert any("ctranslate2" in b for b in python_blocks(ROOT / "docs" / "interop.md"))
    (tmp_path / "runs" / "wmt_ende").mkdir(parents=True)
    (tmp_path / "runs" / "wmt_ende" / "final").symlink_to(wmt_run[0] / "final")
    monkeypatch.chdir(tmp_path)
    for page in PAGES:
        for block in python_blocks(page):
            exec(compile(block, str(page), "exec"), {"__name__": "readme"})
    assert (tmp_path / "runs" / "finetune").exists()  # the Seq2SeqTrainer snippet trained and saved
    assert (tmp_path / "runs" / "wmt_ende" / "ct2").is_dir()  # the CTranslate2 snippet of docs/interop.md exported
