"""The house rules of issue 22, checked on the source (no imports of tefq are executed):
no import circle inside tefq/, no private name of one tefq module imported by another, no
function in tefq/spark over 60 lines, no `__import__`, no module-level state assigned at run time
(no `global`, no assignment to a module-level container or another module's attribute inside a
function)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TEFQ = Path(__file__).resolve().parents[1] / "tefq"
MAX_SPARK_FUNCTION_LINES = 60


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(TEFQ.rglob("*.py")):
        rel = path.relative_to(TEFQ.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = modules()


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path) -> set[str]:
    """The tefq modules `module` imports (at any depth of the file: lazy imports count too)."""
    found: set[str] = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, node, path.name == "__init__.py")
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                found.add(name)
    return found


def test_no_import_circle() -> None:
    graph = {m: imports(m, p) for m, p in MODULES.items()}
    # packages' __init__ re-exports are faces, not rooms: follow modules only
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    import sys
    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_no_private_name_imported_across_modules() -> None:
    bad = []
    for module, path in MODULES.items():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.ImportFrom):
                base = resolve(module, node, path.name == "__init__.py")
                if base.split(".")[0] != "tefq":
                    continue
                bad += [f"{module}: from {base} import {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "\n".join(bad)


def test_no_dunder_import() -> None:
    bad = [f"{m}:{n.lineno}" for m, p in MODULES.items() for n in ast.walk(tree(p))
           if isinstance(n, ast.Name) and n.id == "__import__"]
    assert not bad, bad


def test_spark_functions_are_short() -> None:
    long = []
    for module, path in MODULES.items():
        if not module.startswith("tefq.spark"):
            continue
        for n in ast.walk(tree(path)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = n.end_lineno - n.lineno + 1
                if size > MAX_SPARK_FUNCTION_LINES:
                    long.append(f"{module}.{n.name}: {size} lines")
    assert not long, "\n".join(long)


def module_containers(t: ast.Module) -> set[str]:
    """Module-level names bound to a mutable container (dict, list, set literal or call)."""
    out = set()
    for node in t.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("dict", "list", "set", "defaultdict", "OrderedDict"))
        if mutable:
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def test_no_module_state_assigned_at_run_time() -> None:
    bad = []
    for module, path in MODULES.items():
        t = tree(path)
        containers = module_containers(t)
        # classes defined or imported at module level: assigning their attributes is global state
        classes = {n.name for n in t.body if isinstance(n, ast.ClassDef)}
        classes |= {a.asname or a.name for n in t.body if isinstance(n, ast.ImportFrom) for a in n.names
                    if a.name[:1].isupper()}
        for fn in [n for n in ast.walk(t) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            local = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            for n in ast.walk(fn):
                if isinstance(n, ast.Global):
                    bad.append(f"{module}.{fn.name}: global {', '.join(n.names)}")
                if isinstance(n, ast.Assign):
                    for target in n.targets:
                        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                                and target.value.id in containers and target.value.id not in local:
                            bad.append(f"{module}.{fn.name}: {target.value.id}[...] = ...")
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                                and target.value.id in classes:
                            bad.append(f"{module}.{fn.name}: {target.value.id}.{target.attr} = ...")
    assert not bad, "\n".join(bad)


TESTS = Path(__file__).resolve().parent


def sources_of_tests() -> dict[str, Path]:
    return {str(p.relative_to(TESTS)): p for p in sorted(TESTS.rglob("*.py"))}


def test_no_test_module_imports_another() -> None:
    """What test modules share lives in tests/support/ (or a fixture in conftest.py), so a test
    module is never imported twice under two names and moving one breaks nothing else."""
    bad = []
    for name, path in sources_of_tests().items():
        for node in ast.walk(tree(path)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{name}:{node.lineno}: {m}" for m in mods if m.rpartition(".")[2].startswith("test_")
                    or m in ("conftest", "tests.conftest")]
    assert not bad, "\n".join(bad)


def test_tests_neither_edit_sys_path_nor_name_absolute_paths() -> None:
    """Tests import `tests.support` as a package and find files from tests/support/paths.py."""
    bad = []
    for name, path in sources_of_tests().items():
        bad += [f"{name}:{n.lineno}: sys.path" for n in ast.walk(tree(path)) if isinstance(n, ast.Attribute)
                and n.attr == "path" and isinstance(n.value, ast.Name) and n.value.id == "sys"]
        bad += [f"{name}: {m}" for m in re.findall(r"[\"'](/(?:work|home)/[^\"']*)[\"']", path.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def plan_classes() -> set[str]:
    """The plan kinds: the plan class each `Shape(name, PlanClass, ...)` of tefq/spark/shapes/ names."""
    return {n.args[1].id for m, p in MODULES.items() if m.startswith("tefq.spark.shapes.") for n in ast.walk(tree(p))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Shape"
            and len(n.args) > 1 and isinstance(n.args[1], ast.Name)}


def test_no_dispatch_on_plan_classes_outside_the_registry() -> None:
    """What differs by plan kind is asked of its shape (tefq.spark.shapes.shape_of): no isinstance,
    no type() test and no hasattr/getattr on a plan anywhere else."""
    kinds, bad = plan_classes(), []
    assert {"CurrentAggregatePlan", "FactAggregatePlan", "GeneralPlan", "FallbackPlan", "WindowedPlan"} <= kinds
    for module, path in MODULES.items():
        if module.startswith("tefq.spark.shapes"):
            continue
        for n in ast.walk(tree(path)):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                continue
            names = {x.id for a in n.args[1:] for x in ast.walk(a) if isinstance(x, ast.Name)}
            if n.func.id in ("isinstance", "issubclass") and names & kinds:
                bad.append(f"{module}:{n.lineno}: {n.func.id}(..., {', '.join(sorted(names & kinds))})")
            if n.func.id in ("hasattr", "getattr") and n.args and isinstance(n.args[0], ast.Name) \
                    and n.args[0].id == "plan":
                bad.append(f"{module}:{n.lineno}: {n.func.id}(plan, ...)")
    for module, path in MODULES.items():
        if not module.startswith("tefq.spark.shapes"):
            bad += [f"{module}:{n.lineno}: type(...) is/== a plan class" for n in ast.walk(tree(path))
                    if isinstance(n, ast.Compare) and any(isinstance(x, ast.Name) and x.id in kinds
                                                           for x in n.comparators)]
    assert not bad, "\n".join(bad)


def test_every_function_local_tefq_import_says_why() -> None:
    """Imports are at module top; one inside a function (to break an import circle, or to spare a
    command a measured import cost: pyspark, rdflib) carries a comment saying which, on the line
    above it or on its own lines."""
    bad = []
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for fn in [n for n in ast.walk(tree(path)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for n in ast.walk(fn):
                if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("tefq")) or \
                        isinstance(n, ast.Import) and any(a.name.startswith("tefq") for a in n.names):
                    above = lines[n.lineno - 2].strip() if n.lineno > 1 else ""
                    said = above.startswith("#") or any("#" in line for line in lines[n.lineno - 1:n.end_lineno])
                    # a block of imports: the comment above its first one says it for all
                    block = above.startswith(("from ", "import ")) and not said
                    if not said and not block:
                        bad.append(f"{module}:{n.lineno}: {lines[n.lineno - 1].strip()}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_nothing_read_back_is_unpickled() -> None:
    """What tefq reads from a file (operator state, sink records) goes through the one data codec
    (tefq.spark.runtime.codec): no pickle, marshal or shelve reader anywhere in tefq/ (a checkpoint
    is a file anyone may have written)."""
    readers = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"), ("marshal", "load"),
               ("marshal", "loads"), ("shelve", "open"), ("dill", "load"), ("dill", "loads"), ("cloudpickle", "loads")}
    bad = []
    for module, path in MODULES.items():
        for n in ast.walk(tree(path)):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and (n.value.id, n.attr) in readers:
                bad.append(f"{module}:{n.lineno}: {n.value.id}.{n.attr}")
            if isinstance(n, ast.ImportFrom) and any((n.module or "", a.name) in readers for a in n.names):
                bad.append(f"{module}:{n.lineno}: from {n.module} import ...")
    assert not bad, "\n".join(bad)
