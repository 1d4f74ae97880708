"""hf_vanilla beside fairseq, OpenNMT-py and Sockeye on the same data, tokenizer and budget: `python -m
benchmarks.peers --task TASK --system SYSTEM --seed S` (`__main__`; README.md beside it is the manual).

The package, bottom layer first: `common` (what every peer run shares: its job and process, its record, the peers'
environments, the settings table's row, the exported pieces, the recipes read as modules); `translation`,
`summarization`, `parsing` (what a task's peers share: the demo's settings they match, its splits as pieces, its
scoring); `tasks` (the task registry); one sub-package a peer (`fairseq`, `opennmt`, `sockeye`: its runner and its
settings tables, a task each); `systems` (the peers registry and a peer's run); `recipe` (hf_vanilla's own rows: its
recipe run, its CTranslate2 export, its timed decoding); `comparison` (one run and its record)."""

PROGRAM = "benchmarks.peers"  # the name its command line and its one-line errors go by
