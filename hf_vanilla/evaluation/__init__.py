"""BLEU and EVALB scoring."""
