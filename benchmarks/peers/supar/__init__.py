"""supar's CRF constituency parser (Zhang et al., 2020) as the parsing peer that sets the ceiling: a span chart parser
trained from scratch on the demo's own WSJ splits, scored by the recipe's EVALB (`crf_con`)."""
