"""The embedded models spotviz trains and ships: corpora, tokenizer, architecture, training, prompt sets."""
