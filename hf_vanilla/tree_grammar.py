"""Decoding under the grammar of linearized trees; moved to `hf_vanilla.parsing.grammar`, importable here too."""

from .parsing.grammar import MAX_OPENED_IN_A_ROW, TreeGrammarLogitsProcessor, TreeVocabulary, tree_grammar_for

__all__ = ["MAX_OPENED_IN_A_ROW", "TreeGrammarLogitsProcessor", "TreeVocabulary", "tree_grammar_for"]
