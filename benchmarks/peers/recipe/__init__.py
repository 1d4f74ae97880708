"""hf_vanilla's own rows of the comparison: the recipe run as its docs launch it (`runs`), its CTranslate2 export
(`ct2`), and its final model's decoding of the demo's test split, timed (`decoding`)."""
