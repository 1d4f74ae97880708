"""Corpora, token-budget batching and collation shared by the recipes."""
