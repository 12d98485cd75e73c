"""The facade's structure, counted from the source (issue "The facade as functions of a handle").

Prints, for ``dpframe/``:

* **import cycles inside each package**: strongly connected components of
  more than one module among the modules of one package (its own modules and
  those of its subpackages), counting imports inside functions too but not
  those under ``if TYPE_CHECKING:``;
* **deferred sibling imports in the facade**: imports inside a function of
  ``dpframe/api/`` of another module of ``dpframe/api/``;
* **reads of another object's private attributes**: ``x._name`` (not a
  dunder) where ``x`` is not ``self`` or ``cls``, across ``dpframe/``;
* **modules over 550 lines** and the largest classes by method count.

Run: ``python -m benchmarks.structure [--json]`` from the repository root.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpframe"


@dataclass
class Module:
    """One module's name, imports (module names inside dpframe) and private reads."""

    name: str
    path: Path
    imports: set[str] = field(default_factory=set)
    deferred: list[str] = field(default_factory=list)
    private_reads: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0


def module_name(path: Path) -> str:
    """``dpframe/api/frame.py`` -> ``dpframe.api.frame`` (packages by their ``__init__``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: Module, known: set[str], is_package: bool) -> None:
        self.module = module
        self.known = known
        self.is_package = is_package
        self.depth = 0  # function nesting

    def _target(self, name: str) -> str | None:
        while name and name not in self.known:
            name = name.rpartition(".")[0]
        return name or None

    def _add(self, names: Iterator[str]) -> None:
        for name in names:
            target = self._target(name)
            if target is None or target == self.module.name:
                continue
            self.module.imports.add(target)
            if self.depth:
                self.module.deferred.append(target)

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # noqa: N815

    def visit_Import(self, node: ast.Import) -> None:
        self._add(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.module.name, self.is_package, node)
        # ``from pkg import mod`` imports the submodule when there is one.
        self._add(
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in self.known else base
            for alias in node.names
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        private = attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))
        owner = node.value
        if private and not (isinstance(owner, ast.Name) and owner.id in {"self", "cls"}):
            self.module.private_reads.append((node.lineno, attr))
        self.generic_visit(node)


def load() -> dict[str, Module]:
    """Every module of ``dpframe/`` with its imports and private reads."""
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    modules: dict[str, Module] = {}
    for path in paths:
        name = module_name(path)
        text = path.read_text()
        module = Module(name, path, lines=text.count("\n"))
        _Visitor(module, known, path.name == "__init__.py").visit(ast.parse(text))
        modules[name] = module
    return modules


def _package_of(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else name


def cycles(modules: dict[str, Module]) -> dict[str, list[list[str]]]:
    """Per top-level package, its import cycles (strongly connected components > 1 module)."""
    out: dict[str, list[list[str]]] = defaultdict(list)
    by_package: dict[str, list[str]] = defaultdict(list)
    for name in modules:
        by_package[_package_of(name)].append(name)
    for package, names in by_package.items():
        members = set(names)
        graph = {n: sorted(modules[n].imports & members) for n in names}
        for component in _strongly_connected(graph):
            if len(component) > 1:
                out[package].append(sorted(component))
    return dict(out)


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph[node]
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work and work[-1][0] != node:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
    return result


def _methods(modules: dict[str, Module]) -> list[tuple[int, str]]:
    counts = []
    for module in modules.values():
        for node in ast.walk(ast.parse(module.path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = [
                    n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                counts.append((len(methods), f"{module.name}.{node.name}"))
    return sorted(counts, reverse=True)[:5]


def measure() -> dict[str, object]:
    """Every figure of the module docstring."""
    modules = load()
    api_deferred = [
        (m.name, target)
        for m in modules.values()
        if m.name.startswith("dpframe.api")
        for target in m.deferred
        if target.startswith("dpframe.api")
    ]
    reads = Counter({m.name: len(m.private_reads) for m in modules.values() if m.private_reads})
    return {
        "cycles": cycles(modules),
        "api_deferred_sibling_imports": api_deferred,
        "private_reads_total": sum(reads.values()),
        "private_reads_top": reads.most_common(8),
        "modules_over_550_lines": sorted(
            (m.lines, m.name) for m in modules.values() if m.lines > 550
        ),
        "largest_classes_by_methods": _methods(modules),
    }


def main() -> None:
    """Print the measures (``--json`` for the raw figures)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    figures = measure()
    if parser.parse_args().json:
        print(json.dumps(figures, indent=2))
        return
    cyc = figures["cycles"]
    assert isinstance(cyc, dict)
    print("Import cycles inside a package (function-level imports counted, TYPE_CHECKING not):")
    if not cyc:
        print("  none")
    for package, comps in sorted(cyc.items()):
        for comp in comps:
            print(
                f"  {package}: {len(comp)} modules: {', '.join(c.rsplit('.', 1)[-1] for c in comp)}"
            )
    deferred = figures["api_deferred_sibling_imports"]
    assert isinstance(deferred, list)
    print(f"Deferred sibling imports inside dpframe/api: {len(deferred)}")
    for source, target in deferred:
        print(f"  {source} -> {target}")
    print(f"Reads of another object's private attributes: {figures['private_reads_total']}")
    print(f"  top: {figures['private_reads_top']}")
    print(f"Modules over 550 lines: {figures['modules_over_550_lines']}")
    print(f"Largest classes by methods: {figures['largest_classes_by_methods']}")


if __name__ == "__main__":
    main()
