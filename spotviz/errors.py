"""Errors meant for users that more than one layer raises (the command line prints each as one `error:` line)."""
from __future__ import annotations


class DecodeError(ValueError):
    """Bad input to a decode, with a message meant for the user."""


class ProposerError(DecodeError):
    """A proposer registered from outside the library returned candidates the tree builder cannot use
    (drafter/proposers/checked.py says what it must return)."""


class PromptTruncatedWarning(UserWarning):
    """The prompt and the generation length together exceed the model's context: the prompt's beginning was dropped
    (the model saw its end). The command line and the app say so in their own words; a library caller gets this."""


class IdentityWarning(RuntimeWarning):
    """A speculative run on a target whose batched passes are not proven bit-identical to one-row passes: its output
    may differ from the standard decoder's (targets/invariance.py). Front ends that say so their own way filter it."""


def worded_with_flags(error: Exception, flags: dict) -> Exception:
    """`error`, a DecodeError whose message starts with a DecodeConfig field's name, worded with a command's flag
    for that field instead (`flags`: field -> flag, e.g. {"min_path_prob": "--prune"}): a ValueError; an error
    that names none of them, as it is. (Commands and the configs of commands that decode many times say what went
    wrong in their users' words.)"""
    msg = str(error)
    field = next((f for f in flags if msg.startswith(f + " ")), None)
    return ValueError(flags[field] + msg[len(field):]) if field else error
