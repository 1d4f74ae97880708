"""fairseq 0.12 (`fairseq-fixed`) as a peer: its run (`runner`), its settings tables a task each (`translation_table`,
`summarization_table`, `parsing_table`), and two studies of its checkpoints in hf_vanilla (`in_hf`: scored by
hf_vanilla's model; `replay`: its first updates replayed by hf_vanilla's optimiser)."""
