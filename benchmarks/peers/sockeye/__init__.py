"""Sockeye 3.1 as a peer: its run (`runner`) and its translation settings table (`translation_table`)."""
