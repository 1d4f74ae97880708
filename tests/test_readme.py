"""Every Python snippet of the README runs, against a model folder made by a real (short) recipe run."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_python_snippets_run(wmt_run, tmp_path, monkeypatch):
    blocks = python_blocks()
    assert len(blocks) >= 3 and any("Seq2SeqTrainer" in b for b in blocks) and any("pipeline" in b for b in blocks)
    (tmp_path / "runs" / "wmt_ende").mkdir(parents=True)
    (tmp_path / "runs" / "wmt_ende" / "final").symlink_to(wmt_run[0] / "final")
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (tmp_path / "runs" / "finetune").exists()  # the Seq2SeqTrainer snippet trained and saved
