"""Errors meant for users that more than one layer raises (the command line prints each as one `error:` line)."""
from __future__ import annotations


class DecodeError(ValueError):
    """Bad input to a decode, with a message meant for the user."""


class IdentityWarning(RuntimeWarning):
    """A speculative run on a target whose batched passes are not proven bit-identical to one-row passes: its output
    may differ from the standard decoder's (targets/invariance.py). Front ends that say so their own way filter it."""
