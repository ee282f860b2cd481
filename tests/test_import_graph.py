"""One direction of imports: no module of sag_pg imports, even lazily or for type checking, a module that
(directly or not) imports it back.  The client sits on top; the answer layer gets a search callable."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "sag_pg"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parent + ([node.module] if node.module else []))
                # "from . import prompts" imports the module sag_pg.prompts, not the package's __init__.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            graph.add_edges_from((name, t) for t in targets if t in modules and t != name)
    return graph


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    # Lazy and TYPE_CHECKING imports count too: the client imports the answer layer inside SAG.ask.
    assert graph.has_edge("sag_pg.client", "sag_pg.answer")
    assert graph.has_edge("sag_pg.search.retrieve", "sag_pg.db.retrieval")


def test_no_import_cycle() -> None:
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert cycles == [], f"import cycles: {cycles[:5]}"


def test_only_the_db_package_talks_to_the_database() -> None:
    """One typed boundary: statements are executed in sag_pg/db (and the benchmark code, sag_pg/bench), nowhere
    else in the library."""
    calls = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).parts
        if relative[0] in ("db", "bench"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "executemany", "copy") and node.args
                    and not (isinstance(node.args[0], ast.Constant) and node.args[0].value is None)):
                calls.append(f"{'/'.join(relative)}:{node.lineno} .{node.func.attr}(...)")
    # numpy's array.copy() takes no argument, so only calls with one are statements.
    assert calls == []
