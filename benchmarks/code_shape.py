"""The product code's shape, for the notes that report it before and after a change: functions over
60 lines, modules over 450 lines, and how often a figure travels as a string key (`dict[str, Any]`
and `.get("`), per 1,000 code lines.

A code line is a line holding a token other than a comment, a blank or a docstring (read with ast
and tokenize), so a longer docstring does not dilute the counts. A function's length is its
physical lines from `def` to its last line, the way a reader scrolls it; a module's is its physical
lines. The named JSON of services/core/json_types.py is counted apart (its own lines), never
as typed. Run from the repository root: `.venv/bin/python benchmarks/code_shape.py [--list]`.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The product code: what ships, not its tests, benchmarks or scripts.
PRODUCT = ("services", "commands", "web", "app_pages", "db", "app.py", "cli.py", "serve.py")
LONG_FUNCTION = 60
LONG_MODULE = 450
NON_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


@dataclass(frozen=True)
class Module:
    path: str
    lines: int
    code_lines: int
    dict_any: int
    foreign: int
    json_out: int
    gets: int
    long_functions: list[tuple[str, int]]


def product_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for entry in PRODUCT:
        path = root / entry
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in sorted(path.rglob("*.py")) if "__pycache__" not in p.parts)
    return files


def docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str, tree: ast.AST) -> int:
    docs = docstring_lines(tree)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in NON_CODE:
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docs)


def long_functions(tree: ast.AST) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if length > LONG_FUNCTION:
                    found.append((name, length))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


#: A name given to `dict[str, Any]` (`X: TypeAlias = dict[str, Any]`): each use counts as one.
ALIAS = re.compile(r"^(\w+)(?:\s*:\s*TypeAlias)?\s*=\s*dict\[str, Any\]\s*$", re.MULTILINE)


def aliases_of_any(files: list[Path]) -> set[str]:
    """Every other name of `dict[str, Any]` in the product (ForeignJson is counted apart)."""
    names = {m.group(1) for path in files for m in ALIAS.finditer(path.read_text(encoding="utf-8"))}
    return names - {"ForeignJson"}


def measure(path: Path, root: Path, aliases: frozenset[str] | set[str] = frozenset()) -> Module:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    # A use of an alias is a dict[str, Any] under another name; its definition is counted once.
    renamed = sum(len(re.findall(rf"\b{re.escape(name)}\b", source)) for name in aliases)
    defined = sum(1 for m in ALIAS.finditer(source) if m.group(1) in aliases)
    return Module(
        path=str(path.relative_to(root)),
        lines=len(source.splitlines()),
        code_lines=code_lines(source, tree),
        dict_any=source.count("dict[str, Any]") + renamed - defined,
        foreign=len(re.findall(r"\bForeignJson\b", source)),
        json_out=len(re.findall(r"\bJsonOut\b", source)),
        gets=source.count('.get("'),
        long_functions=long_functions(tree),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name every long function and module")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    files = product_files(args.root)
    aliases = aliases_of_any(files)
    modules = [measure(path, args.root, aliases) for path in files]
    code = sum(m.code_lines for m in modules)
    dict_any = sum(m.dict_any for m in modules)
    gets = sum(m.gets for m in modules)
    foreign = sum(m.foreign for m in modules)
    json_out = sum(m.json_out for m in modules)
    functions = sorted(
        ((length, f"{m.path}:{name}") for m in modules for name, length in m.long_functions),
        reverse=True,
    )
    long_modules = sorted(((m.lines, m.path) for m in modules if m.lines > LONG_MODULE), reverse=True)
    print(f"product code: {len(modules)} modules, {code} code lines")
    print(f"functions over {LONG_FUNCTION} lines: {len(functions)}")
    print(f"modules over {LONG_MODULE} lines: {len(long_modules)}")
    if aliases:
        print(f"other names of dict[str, Any], counted with it: {', '.join(sorted(aliases))}")
    print(f"dict[str, Any]: {dict_any} ({1000 * dict_any / code:.1f} per 1,000 code lines)")
    # Named JSON (services/core/json_types.py) is counted apart, so moving a dict to a name can
    # never pass for typing it: ForeignJson is someone else's JSON, JsonOut is write-only.
    print(f"ForeignJson (someone else's JSON): {foreign} ({1000 * foreign / code:.1f} per 1,000)")
    print(f"JsonOut (write-only JSON): {json_out} ({1000 * json_out / code:.1f} per 1,000)")
    print(f'.get(": {gets} ({1000 * gets / code:.1f} per 1,000 code lines)')
    if args.list:
        print(f"\nfunctions over {LONG_FUNCTION} lines:")
        for length, name in functions:
            print(f"  {length:4d}  {name}")
        print(f"\nmodules over {LONG_MODULE} lines:")
        for length, name in long_modules:
            print(f"  {length:4d}  {name}")


if __name__ == "__main__":
    main()
