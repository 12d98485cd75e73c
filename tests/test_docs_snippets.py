"""Every code block of the documentation runs, and every configuration example parses.

The ```python blocks of each page under docs/ run in order, in one fresh
namespace per page (as a reader would type them into one notebook), in a
temporary folder with a temporary ledger location and key.  A block that
cannot run here says so just above its fence, with the reason, in a comment
the site does not show::

    <!-- docs-test: skip (needs a running curator) -->

Such blocks are listed as skipped tests with their reason, never counted as
passing.  A page may hold setup code the reader does not need to see (a date
column for the examples of one page), run before its first block::

    <!-- docs-test: setup
    df = ...
    -->

Every ```toml block parses (tomllib); a complete curator catalog (with
datasets and analysts) is also loaded as ``dpframe serve`` would load it.
Every ```json block parses.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: A fenced block: its indentation, language and body (fences may sit inside list items).
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    flags=re.M | re.S,
)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->\s*$")
SETUP = re.compile(r"<!--\s*docs-test:\s*setup\n(?P<code>.*?)-->", flags=re.S)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    number: int  # 1-based among the page's blocks of its language
    line: int
    lang: str
    code: str
    skip: str | None  # the reason, for a block that cannot run here


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "notebooks" not in p.parts)


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks: list[Block] = []
    counts: dict[str, int] = {}
    for found in FENCE.finditer(text):
        lang = found["lang"].lower()
        counts[lang] = counts.get(lang, 0) + 1
        before = text[: found.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = SKIP.search(before)
        indent = len(found["indent"])
        body = "".join(line[indent:] for line in found["body"].splitlines(keepends=True))
        blocks.append(
            Block(
                page=str(page.relative_to(DOCS)),
                number=counts[lang],
                line=text.count("\n", 0, found.start()) + 1,
                lang=lang,
                code=textwrap.dedent(body),
                skip=marker["reason"].strip() if marker else None,
            )
        )
    return blocks


def _of(lang: str) -> list[Block]:
    return [b for page in _pages() for b in _blocks(page) if b.lang == lang]


def _pages_with_python() -> list[str]:
    return sorted({b.page for b in _of("python") if b.skip is None})


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary working folder, ledger location and key: no page writes outside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path / "ledger" / "ledger.sqlite"))
    monkeypatch.setenv("DPFRAME_KEY", str(tmp_path / "key" / "key"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.parametrize("page", _pages_with_python())
def test_page_runs(page: str, isolated: Path) -> None:
    """The page's python blocks run in order in one fresh namespace."""
    path = DOCS / page
    namespace: dict[str, Any] = {"__name__": f"docs_{path.stem}"}
    setup = SETUP.search(path.read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings the pages show on purpose (thin cells, ...)
        if setup is not None:
            exec(compile(setup["code"], f"{page} (setup)", "exec"), namespace)
        ran = 0
        for block in _blocks(path):
            if block.lang != "python" or block.skip is not None:
                continue
            source = "\n" * (block.line) + block.code  # tracebacks point at the page's lines
            try:
                exec(compile(source, str(path), "exec"), namespace)
            except Exception as exc:
                raise AssertionError(
                    f"{page}, python block {block.number} (line {block.line}) failed: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            ran += 1
    assert ran > 0
    try:
        import matplotlib.pyplot as plt

        plt.close("all")
    except ImportError:  # pragma: no cover - matplotlib is in the test extra
        pass


SKIPPED = [b for b in _of("python") if b.skip is not None]


@pytest.mark.parametrize("block", SKIPPED, ids=[f"{b.page}:{b.line}" for b in SKIPPED] or None)
def test_block_marked_not_run(block: Block) -> None:
    """A block that cannot run here is reported as skipped, with its reason."""
    compile(block.code, block.page, "exec")  # it is Python all the same
    pytest.skip(f"{block.page}, line {block.line}: {block.skip}")


def test_the_runner_finds_the_pages() -> None:
    """The runner sees the guide's pages and their blocks (a broken pattern finds none)."""
    pages = _pages_with_python()
    assert {"first-session.md", "budget.md", "exploring.md"} <= set(pages)
    assert len(_of("python")) >= 25


TOML = _of("toml")


@pytest.mark.parametrize("block", TOML, ids=[f"{b.page}:{b.line}" for b in TOML])
def test_toml_example_parses(block: Block, tmp_path: Path) -> None:
    """Every TOML example is valid TOML; a whole catalog loads as `dpframe serve` loads it."""
    data = tomllib.loads(block.code)
    if "datasets" in data and "analysts" in data:
        from dpframe.curator.catalog import Catalog

        catalog = Catalog.from_dict(data, tmp_path)
        assert set(catalog.datasets) == set(data["datasets"])
        assert set(catalog.analysts) == set(data["analysts"])


JSON = _of("json")


@pytest.mark.parametrize("block", JSON, ids=[f"{b.page}:{b.line}" for b in JSON])
def test_json_example_parses(block: Block) -> None:
    """Every JSON example is valid JSON."""
    assert json.loads(block.code) is not None


def test_every_config_example_is_checked() -> None:
    """The catalog examples of the data owner's pages are among the parsed blocks."""
    assert {"curator.md", "owners.md"} <= {b.page for b in TOML}
