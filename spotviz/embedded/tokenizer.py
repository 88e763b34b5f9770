"""Byte-level BPE tokenizer for the embedded models, trained locally with `tokenizers`."""
from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from .corpus import EOT

MASK = "<|mask|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [EOT, MASK, PAD]


def train_tokenizer(text: str, vocab_size: int = 1024, split_digits: bool = False) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on `text` (documents joined by EOT); returns a transformers fast tokenizer.

    `split_digits`: every digit is a token of its own (numbers are never merged), so each digit of a result is
    one decision of the model (and one a drafter can predict)."""
    tok = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level]) \
        if split_digits else byte_level
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    docs = text.split(EOT)
    tok.train_from_iterator(docs, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=EOT, mask_token=MASK, pad_token=PAD, clean_up_tokenization_spaces=False
    )


def encode_corpus(tokenizer: PreTrainedTokenizerFast, text: str) -> list[int]:
    """Token ids of a corpus whose documents are separated by EOT (the EOT id is kept between them)."""
    eot = tokenizer.convert_tokens_to_ids(EOT)
    ids: list[int] = []
    for i, doc in enumerate(text.split(EOT)):
        if i:
            ids.append(eot)
        ids.extend(tokenizer(doc, add_special_tokens=False)["input_ids"])
    return ids
