"""Splitting magic lines where keys and paths may hold spaces, commas and quotes.

``%dp_load pf "my data.csv" --categories region="north east",south``: words
are split on whitespace outside quotes, and a category list on commas outside
quotes; a quoted part (single or double quotes) is taken literally, quotes
removed.  No backslash escapes, so Windows paths work as typed.
"""

from __future__ import annotations

from dpframe.errors import DPError

__all__ = ["MagicInputError", "split_keys", "split_words", "unquote"]


class MagicInputError(DPError, ValueError):
    """A magic's arguments do not parse."""


def _split(text: str, separator: str | None, keep_quotes: bool) -> list[str]:
    """Split ``text`` on ``separator`` (None: whitespace) outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    started = False
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
                if keep_quotes:
                    current.append(char)
            else:
                current.append(char)
            continue
        if char in "'\"":
            quote, started = char, True
            if keep_quotes:
                current.append(char)
        elif char.isspace() if separator is None else char == separator:
            if started or current:
                parts.append("".join(current))
            current, started = [], False
        else:
            current.append(char)
            started = True
    if quote is not None:
        raise MagicInputError(f"unclosed quote ({quote}) in {text!r}.")
    if started or current:
        parts.append("".join(current))
    return parts


def split_words(line: str) -> list[str]:
    """The words of a magic line: whitespace outside quotes separates; quotes are kept."""
    return _split(line, None, keep_quotes=True)


def unquote(word: str) -> str:
    """``word`` with its quoted parts taken literally and the quotes removed."""
    pieces = _split(word, "\0", keep_quotes=False)  # NUL never appears in a magic line
    return "".join(pieces)


def split_keys(text: str) -> list[str]:
    """``'"north east",south'`` → ``["north east", "south"]``: commas outside quotes separate."""
    return _split(text, ",", keep_quotes=False)


def split_assignment(item: str) -> tuple[str, str, bool]:
    """``'"home town"=a,b'`` → ``("home town", "a,b", True)``: the first ``=`` outside quotes.

    The name is unquoted; the rest is returned as written.  The flag says
    whether there was an ``=``.
    """
    quote: str | None = None
    for index, char in enumerate(item):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "=":
            return unquote(item[:index]), item[index + 1 :], True
    return unquote(item), "", False
