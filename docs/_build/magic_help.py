"""MkDocs hook: the magics' reference page shows each magic's own help, generated.

``<!-- magic-help -->`` in a page becomes one section per magic with the text
``%dp_load?`` prints in a notebook (built by IPython's ``magic_arguments``
from the same argument declarations the magic parses), so the page cannot
drift from the code.
"""

from __future__ import annotations

import inspect
from typing import Any

MARKER = "<!-- magic-help -->"
#: The magics in the order the page lists them: (method, how it is typed).
MAGICS = (
    ("dp_session", "%dp_session"),
    ("dp_load", "%dp_load"),
    ("dp_connect", "%dp_connect"),
    ("dp_budget", "%dp_budget"),
    ("dp_ledger", "%dp_ledger"),
    ("dp_explain", "%dp_explain"),
    ("dpsql", "%%dpsql"),
)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace the marker with the generated help of every magic."""
    if MARKER not in markdown:
        return markdown
    from dpframe.jupyter.magics import DPMagics

    sections = []
    for method, typed in MAGICS:
        text = inspect.cleandoc(getattr(DPMagics, method).__doc__ or "")
        text = text.removeprefix("::").strip("\n")
        sections.append(f"## `{typed}`\n\n```text\n{text}\n```\n")
    return markdown.replace(MARKER, "\n".join(sections))
