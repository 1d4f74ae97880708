"""OpenNMT-py 3.5.1 as a peer: its run (`runner`) and its settings tables a task each (`translation_table`,
`summarization_table`)."""
