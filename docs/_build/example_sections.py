"""A griffe extension for the API reference: ``Example:`` sections render as examples.

dpframe's docstrings name their example section ``Example:`` (the project's
convention); griffe's Google parser reads only ``Examples:`` as a section of
``>>>`` lines (``Example:`` becomes an admonition whose ``>>>`` lines render
as quotes). This renames the heading before the docstring is parsed; the
source is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADING = re.compile(r"^(\s*)Example:\s*$", flags=re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` to ``Examples:`` in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring's heading (the parsed form is computed later, on demand)."""
        if obj.docstring is not None:
            obj.docstring.value = _HEADING.sub(r"\1Examples:", obj.docstring.value)
