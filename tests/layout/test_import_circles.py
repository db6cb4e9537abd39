"""No import circle between the modules of any crate of the workspace: a module's `crate::` and
`super::` paths (comments aside) are its edges; every strongly connected component of more than
one module is a circle. (On the commit before the crate split this finds the three the split
untied: request ↔ schema_doc, service verify → paid/pricing/unpaid → verify, and the embedded
store ↔ its journal.)"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH = re.compile(r"\b(crate|super)::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)")


def module_graph(src: Path) -> dict:
    modules = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        code = "\n".join(line for line in f.read_text().splitlines() if not line.strip().startswith("//"))
        targets = set()
        for kind, path in PATH.findall(code):
            base = [] if kind == "crate" else parts[:-1]
            targets.add(tuple(base + path.split("::")))
        modules[tuple(parts)] = targets

    def resolve(path):
        for i in range(len(path), 0, -1):
            if path[:i] in modules:
                return path[:i]
        return None

    return {m: {r for t in ts if (r := resolve(t)) and r != m} for m, ts in modules.items()}


def circles(graph: dict) -> list:
    """Tarjan's strongly connected components of more than one module."""
    sys.setrecursionlimit(10_000)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append("::".join(w) or "crate")
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def crate_sources():
    for manifest in sorted(ROOT.glob("**/Cargo.toml")):
        if any(p in ("target", "node_modules", ".venv", "fuzz") for p in manifest.relative_to(ROOT).parts):
            continue
        if (manifest.parent / "src").is_dir():
            yield manifest.parent / "src"


def test_no_crate_has_an_import_circle():
    sources = list(crate_sources())
    assert len(sources) >= 15, sources
    found = {str(src.relative_to(ROOT)): c for src in sources if (c := circles(module_graph(src)))}
    assert not found, found


def test_the_finder_finds_a_circle(tmp_path):
    (tmp_path / "a.rs").write_text("use crate::b::B;\npub struct A;\n")
    (tmp_path / "b.rs").write_text("// use crate::c; (a comment is no edge)\nuse crate::a::A;\npub struct B;\n")
    (tmp_path / "c.rs").write_text("use super::a::A;\n")
    assert circles(module_graph(tmp_path)) == [["a", "b"]]
