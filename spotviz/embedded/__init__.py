"""The embedded models spotviz trains and ships: corpora (Shakespeare, Python, generated word
problems and stories), tokenizer, architecture, prompt sets (training: spotviz/training)."""
