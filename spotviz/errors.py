"""Errors meant for users that more than one layer raises (the command line prints each as one `error:` line)."""
from __future__ import annotations


class DecodeError(ValueError):
    """Bad input to a decode, with a message meant for the user."""
