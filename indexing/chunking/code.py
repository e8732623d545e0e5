"""Syntax-aware code chunking with tree-sitter.

Top-level definitions become one chunk each (with the comments, docstrings
and decorators glued above them); module-level statements in between are
packed together; classes over budget are split into a header chunk and one
chunk per method. All chunks are whole lines, addressed by tree-sitter rows,
which count "\\n" exactly like `windows.Lines`.

Code too large to parse cheaply (over `ChunkBudget.code_parse_max_bytes`) is left to the
line-window fallback before tree-sitter sees it (`parse_refusal`); lines no one wrote by
hand (minified bundles, embedded data) are kept from the parser and cut into windows
where they stand (`_without_long_lines`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from tree_sitter import Language, Node, Parser

from indexing.types import ChunkPiece, RawUnit

from .headings import bounded_symbol
from .windows import Lines, Span, line_windows, make_piece

if TYPE_CHECKING:
    from . import ChunkBudget


def _load_language(name: str) -> object:
    # Imported lazily so a broken grammar only disables its own language.
    if name == "python":
        import tree_sitter_python

        return tree_sitter_python.language()
    if name == "javascript":
        import tree_sitter_javascript

        return tree_sitter_javascript.language()
    if name in ("typescript", "tsx"):
        import tree_sitter_typescript

        if name == "tsx":
            return tree_sitter_typescript.language_tsx()
        return tree_sitter_typescript.language_typescript()
    if name == "go":
        import tree_sitter_go

        return tree_sitter_go.language()
    if name == "java":
        import tree_sitter_java

        return tree_sitter_java.language()
    if name == "php":
        import tree_sitter_php

        return tree_sitter_php.language_php()  # with its <?php tags and inline HTML
    if name in _GRAMMAR_MODULES:
        import importlib

        return importlib.import_module(_GRAMMAR_MODULES[name]).language()
    raise ValueError(f"no tree-sitter grammar for {name!r}")


# Grammars whose module exposes a single language().
_GRAMMAR_MODULES = {
    "rust": "tree_sitter_rust", "c": "tree_sitter_c", "cpp": "tree_sitter_cpp",
    "csharp": "tree_sitter_c_sharp", "ruby": "tree_sitter_ruby", "bash": "tree_sitter_bash",
    "kotlin": "tree_sitter_kotlin", "swift": "tree_sitter_swift",
}  # fmt: skip
SUPPORTED_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "java", "php", *_GRAMMAR_MODULES}
)
_ALIASES = {"py": "python", "js": "javascript", "jsx": "javascript", "ts": "typescript"}
_ALIASES |= {"golang": "go", "rs": "rust", "c++": "cpp", "cxx": "cpp", "cc": "cpp"}
_ALIASES |= {"c#": "csharp", "cs": "csharp", "c_sharp": "csharp", "rb": "ruby", "kt": "kotlin"}
_ALIASES |= {"sh": "bash", "shell": "bash", "zsh": "bash"}


def normalize_language(language: str | None) -> str | None:
    """The grammar name for a unit's language, or None if we have no grammar."""
    if not language:
        return None
    name = language.strip().lower()
    name = _ALIASES.get(name, name)
    return name if name in SUPPORTED_LANGUAGES else None


@cache
def _parser(language: str) -> Parser:
    return Parser(Language(_load_language(language)))


# --- what counts as a definition ------------------------------------------


@dataclass(frozen=True)
class _Definition:
    name: str
    node: Node  # the definition itself (inside any export/decorator wrapper)
    body: Node | None = None  # member container when the definition is class-like


@dataclass(frozen=True)
class _Item:
    """Consecutive rows of a container: a definition or other statements."""

    first_row: int
    last_row: int
    symbol: str | None = None
    definition: _Definition | None = None


_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
# Decorators are siblings of the member they decorate in JS/TS class bodies.
# Rust's #[derive] and C#'s [Serializable] are the siblings before their item.
_ATTACHABLE_TYPES = _COMMENT_TYPES | {"decorator", "attribute_item", "attribute_list"}

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_CLASS_VALUES = frozenset({"class", "class_expression"})


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _named(node: Node, field: str) -> str:
    return _text(node.child_by_field_name(field))


def _python_definition(node: Node) -> _Definition | None:
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return _python_definition(inner) if inner is not None else None
    if node.type == "function_definition":
        return _Definition(_named(node, "name"), node)
    if node.type == "class_definition":
        return _Definition(_named(node, "name"), node, node.child_by_field_name("body"))
    if node.type == "expression_statement" and len(node.named_children) == 1:
        # `lambda_handler = lambda event, context: ...` is a function by another name.
        assignment = node.named_children[0]
        value = assignment.child_by_field_name("right")
        name = assignment.child_by_field_name("left")
        if (
            assignment.type == "assignment"
            and value is not None
            and value.type == "lambda"
            and name is not None
            and name.type == "identifier"
        ):
            return _Definition(_text(name), node)
    return None


def _go_definition(node: Node) -> _Definition | None:
    if node.type == "function_declaration":
        return _Definition(_named(node, "name"), node)
    if node.type == "method_declaration":
        receiver = _go_receiver_type(node.child_by_field_name("receiver"))
        name = _named(node, "name")
        return _Definition(f"{receiver}.{name}" if receiver else name, node)
    if node.type == "type_declaration":
        # `type ( InvoiceID string; CustomerID string )` is named by all its types; each
        # is also a symbol of its own lines (`_go_names`).
        names = [_named(spec, "name") for spec in _go_type_specs(node)]
        return _Definition(", ".join(names), node) if names else None
    return None


def _go_type_specs(node: Node) -> list[Node]:
    return [spec for spec in node.named_children if spec.type in ("type_spec", "type_alias")]


def _go_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "type_declaration":
        specs = _go_type_specs(node)
        if len(specs) > 1:
            yield from ((_named(spec, "name"), spec) for spec in specs)
    elif node.type in ("const_declaration", "var_declaration"):
        for spec in node.named_children:
            if spec.type == "var_spec_list":  # var ( ... )
                yield from _go_names_of_specs(spec.named_children)
            else:
                yield from _go_names_of_specs([spec])


def _go_names_of_specs(specs: Iterable[Node]) -> Iterable[tuple[str, Node]]:
    for spec in specs:
        if spec.type in ("const_spec", "var_spec"):
            for name in spec.children_by_field_name("name"):
                yield _text(name), spec


def _go_receiver_type(receiver: Node | None) -> str:
    """`Server` for receivers like (s *Server) or (p Pair[K, V])."""
    if receiver is None:
        return ""
    stack = [receiver]
    while stack:
        node = stack.pop(0)
        if node.type == "type_identifier":
            return _text(node)
        stack.extend(node.named_children)
    return ""


_JAVA_TYPES = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)
_JAVA_METHODS = frozenset(
    {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
)


def _java_definition(node: Node) -> _Definition | None:
    if node.type in _JAVA_TYPES:
        return _Definition(_named(node, "name"), node, node.child_by_field_name("body"))
    if node.type in _JAVA_METHODS:
        return _Definition(_named(node, "name"), node)
    return None


_JS_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_signature",
        "method_definition",
        "method_signature",
        "abstract_method_signature",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "internal_module",
        "module",
    }
)
_JS_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})


def _js_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind in _JS_CLASSES:
        return _Definition(
            _named(node, "name") or "default", node, node.child_by_field_name("body")
        )
    if kind in _JS_FUNCTIONS:
        return _Definition(_named(node, "name").strip("\"'") or "default", node)
    if kind in ("export_statement", "ambient_declaration", "expression_statement"):
        inner = node.child_by_field_name("declaration")
        candidates = [inner] if inner is not None else node.named_children
        for child in candidates:
            found = _js_definition(child)
            if found is not None:
                return found
        return None
    if kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            found = _js_assigned(declarator, "name", "value")
            if found is not None:
                return found
        return None
    if kind == "assignment_expression":
        return _js_assigned(node, "left", "right")
    if kind in ("public_field_definition", "field_definition"):
        name_field = "name" if node.child_by_field_name("name") is not None else "property"
        return _js_assigned(node, name_field, "value")
    return None


def _js_assigned(node: Node, name_field: str, value_field: str) -> _Definition | None:
    """`x = () => ...`, `const X = class {...}` and the like."""
    value = node.child_by_field_name(value_field)
    name = _text(node.child_by_field_name(name_field))
    if value is None or not name or "\n" in name:
        return None
    if value.type in _FUNCTION_VALUES:
        return _Definition(name, value)
    if value.type in _CLASS_VALUES:
        return _Definition(name, value, value.child_by_field_name("body"))
    return None


def _dotted(node: Node | None) -> str:
    """`Billing.Invoice` for a name written `Billing::Invoice` or `App\\Billing`."""
    return re.sub(r"\s*(?:::|\\)\s*", ".", _text(node)).strip(".")


def _body(node: Node, *types: str) -> Node | None:
    """The member container of a declaration whose grammar gives it no `body` field."""
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    return next((child for child in node.named_children if child.type in types), None)


_RUST_TYPES = frozenset({"struct_item", "enum_item", "union_item", "type_item"})


def _rust_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind in ("function_item", "function_signature_item", "macro_definition"):
        return _Definition(_named(node, "name"), node)
    if kind in _RUST_TYPES:
        return _Definition(_named(node, "name"), node)
    if kind in ("trait_item", "mod_item"):
        return _Definition(_named(node, "name"), node, node.child_by_field_name("body"))
    if kind == "impl_item":
        # `impl Display for Ledger` holds Ledger's methods: `Ledger.fmt`.
        name = _rust_type_name(node.child_by_field_name("type"))
        return _Definition(name, node, node.child_by_field_name("body")) if name else None
    return None


def _rust_type_name(node: Node | None) -> str:
    """`Wrapper` for `Wrapper<T>`, `Formatter` for `fmt::Formatter`, `Ledger` for `&Ledger`."""
    while node is not None and node.type in ("generic_type", "reference_type", "pointer_type"):
        node = node.child_by_field_name("type")
    if node is not None and node.type in ("scoped_type_identifier", "scoped_identifier"):
        node = node.child_by_field_name("name")
    return _text(node) if node is not None and "\n" not in _text(node) else ""


_C_TYPES = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
)
_C_DECLARATORS = frozenset(
    {"pointer_declarator", "reference_declarator", "parenthesized_declarator",
     "attributed_declarator", "function_declarator"}
)  # fmt: skip


def _c_definition(node: Node) -> _Definition | None:
    """C and C++: functions (`Ledger::total` as `Ledger.total`), structs, unions, enums,
    classes and namespaces, typedefs of a struct or enum, templates of any of them."""
    kind = node.type
    if kind == "function_definition":
        name = _c_function_name(node.child_by_field_name("declarator"))
        return _Definition(name, node) if name else None
    if kind in _C_TYPES and node.child_by_field_name("body") is not None:
        name = _dotted(node.child_by_field_name("name"))
        return _Definition(name, node, node.child_by_field_name("body")) if name else None
    if kind == "type_definition":
        inner = node.child_by_field_name("type")
        name = _text(node.child_by_field_name("declarator"))
        if inner is not None and inner.type in _C_TYPES and name.isidentifier():
            return _Definition(name, node)
        return None
    if kind == "namespace_definition" and node.child_by_field_name("body") is not None:
        name = _dotted(node.child_by_field_name("name")) or "(anonymous namespace)"
        return _Definition(name, node, node.child_by_field_name("body"))
    if kind == "template_declaration":
        for child in node.named_children:
            found = _c_definition(child)
            if found is not None:
                return _Definition(found.name, node, found.body)
        return None
    return None


def _c_function_name(declarator: Node | None) -> str:
    while declarator is not None and declarator.type in _C_DECLARATORS:
        if declarator.type == "function_declarator":
            name = _dotted(declarator.child_by_field_name("declarator"))
            return name if "\n" not in name and "(" not in name else ""
        declarator = declarator.child_by_field_name("declarator") or next(
            iter(declarator.named_children), None
        )
    return ""


_CSHARP_TYPES = frozenset(
    {"class_declaration", "struct_declaration", "interface_declaration", "enum_declaration",
     "record_declaration", "record_struct_declaration", "namespace_declaration"}
)  # fmt: skip
_CSHARP_MEMBERS = frozenset(
    {"method_declaration", "constructor_declaration", "destructor_declaration",
     "operator_declaration", "conversion_operator_declaration", "delegate_declaration",
     "local_function_statement"}
)  # fmt: skip


def _csharp_definition(node: Node) -> _Definition | None:
    if node.type in _CSHARP_TYPES:
        name = _dotted(node.child_by_field_name("name"))
        return _Definition(name, node, node.child_by_field_name("body")) if name else None
    if node.type in _CSHARP_MEMBERS:
        name = _named(node, "name") or _named(node, "type")
        return _Definition(name, node) if name else None
    return None


def _ruby_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind == "method":
        return _Definition(_named(node, "name"), node)
    if kind == "singleton_method":  # def self.create
        return _Definition(_named(node, "name"), node)
    if kind in ("class", "module"):
        return _Definition(_dotted(node.child_by_field_name("name")), node, _body(node))
    return None


_PHP_TYPES = frozenset(
    {"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"}
)


def _php_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind in _PHP_TYPES:
        return _Definition(_named(node, "name"), node, node.child_by_field_name("body"))
    if kind in ("function_definition", "method_declaration"):
        return _Definition(_named(node, "name"), node)
    if kind == "namespace_definition" and node.child_by_field_name("body") is not None:
        name = _dotted(node.child_by_field_name("name"))
        return _Definition(name, node, node.child_by_field_name("body")) if name else None
    return None


def _bash_definition(node: Node) -> _Definition | None:
    if node.type == "function_definition":
        return _Definition(_named(node, "name"), node)
    return None


_KOTLIN_BODIES = ("class_body", "enum_class_body")


def _kotlin_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind in ("class_declaration", "object_declaration"):
        return _Definition(_named(node, "name"), node, _body(node, *_KOTLIN_BODIES))
    if kind == "companion_object":
        name = _named(node, "name") or "Companion"
        return _Definition(name, node, _body(node, *_KOTLIN_BODIES))
    if kind in ("function_declaration", "secondary_constructor"):
        return _Definition(_named(node, "name") or "constructor", node)
    if kind == "type_alias":
        return _Definition(_named(node, "type"), node)
    return None


_SWIFT_BODIES = ("class_body", "enum_class_body", "protocol_body")


def _swift_definition(node: Node) -> _Definition | None:
    kind = node.type
    if kind in ("class_declaration", "protocol_declaration"):
        # `extension Ledger: Post { ... }` is a class_declaration named by a user_type.
        name = _text(node.child_by_field_name("name")).split("<", 1)[0].strip()
        return _Definition(name, node, _body(node, *_SWIFT_BODIES)) if name else None
    if kind in ("function_declaration", "protocol_function_declaration"):
        return _Definition(_named(node, "name"), node)
    if kind in ("init_declaration", "deinit_declaration"):
        return _Definition(kind.split("_", 1)[0], node)
    if kind == "typealias_declaration":
        return _Definition(_named(node, "name"), node)
    return None


# --- names that are no chunk of their own ---------------------------------
#
# Constants, variables, fields and prototypes are packed with the statements around them;
# a conditional definition (`if os.name == "nt": def platform_path()`) is part of its
# `if`. Each is still named on the chunk that holds it (`locator["symbols"]`), so a search
# for `MAX_RETRY_COUNT` finds where it is set and the citation names it.


def _no_names(node: Node) -> Iterable[tuple[str, Node]]:
    return ()


def _python_names(node: Node, depth: int = 0) -> Iterable[tuple[str, Node]]:
    kind = node.type
    if kind == "expression_statement":
        for assignment in node.named_children:
            while assignment.type == "assignment":  # a = b = 1
                for target in _python_targets(assignment.child_by_field_name("left")):
                    yield _text(target), node
                assignment = assignment.child_by_field_name("right")
                if assignment is None:
                    break
    elif kind == "type_alias_statement":
        left = node.child_by_field_name("left")
        if left is not None:
            yield _text(left).split("[", 1)[0], node
    elif kind in _PYTHON_BLOCKS and depth < MAX_NESTING:
        # Module-level `if`/`try`/`with`: the definitions and assignments in its blocks.
        for block in _python_blocks(node):
            for child in block.named_children:
                definition = _python_definition(child)
                if definition is not None:
                    yield definition.name, child
                else:
                    yield from _python_names(child, depth + 1)


_PYTHON_BLOCKS = frozenset({"if_statement", "try_statement", "with_statement"})
_PYTHON_CLAUSES = frozenset(
    {"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause"}
)


def _python_blocks(node: Node) -> Iterable[Node]:
    for child in node.named_children:
        if child.type == "block":
            yield child
        elif child.type in _PYTHON_CLAUSES:
            yield from (c for c in child.named_children if c.type == "block")


def _python_targets(left: Node | None) -> Iterable[Node]:
    if left is None:
        return
    if left.type == "identifier":
        yield left
    elif left.type in ("pattern_list", "tuple_pattern"):  # a, b = ...
        yield from (child for child in left.named_children if child.type == "identifier")


def _js_names(node: Node) -> Iterable[tuple[str, Node]]:
    kind = node.type
    if kind == "export_statement":
        inner = node.child_by_field_name("declaration")
        if inner is not None:
            yield from ((name, node) for name, _ in _js_names(inner))
    elif kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            name = declarator.child_by_field_name("name")
            if declarator.type == "variable_declarator" and name is not None:
                if name.type == "identifier":
                    yield _text(name), node
    elif kind in ("public_field_definition", "field_definition"):
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        if name is not None and "\n" not in _text(name):
            yield _text(name), node


def _field_names(node: Node) -> Iterable[tuple[str, Node]]:
    """Java and C# fields, C# properties and events: `int MAX = 5, MIN = 1;`."""
    if node.type in ("property_declaration", "event_declaration"):
        name = node.child_by_field_name("name")
        if name is not None:
            yield _text(name), node
    elif node.type in ("field_declaration", "constant_declaration", "event_field_declaration"):
        for child in _descendants(node, 2):
            if child.type == "variable_declarator":
                name = child.child_by_field_name("name") or next(
                    (c for c in child.named_children if c.type == "identifier"), None
                )
                if name is not None:
                    yield _text(name), node


def _descendants(node: Node, depth: int) -> Iterable[Node]:
    for child in node.named_children:
        yield child
        if depth > 1:
            yield from _descendants(child, depth - 1)


def _rust_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type in ("const_item", "static_item"):
        yield _named(node, "name"), node


def _c_names(node: Node) -> Iterable[tuple[str, Node]]:
    """Macros, globals and prototypes; fields and declared methods of a C++ class."""
    kind = node.type
    if kind in ("preproc_def", "preproc_function_def"):
        yield _named(node, "name"), node
    elif kind in ("declaration", "field_declaration"):
        for declarator in node.children_by_field_name("declarator"):
            name = _c_declared_name(declarator)
            if name:
                yield name, node
    elif kind == "template_declaration":
        for child in node.named_children:
            yield from ((name, node) for name, _ in _c_names(child))


def _c_declared_name(declarator: Node | None) -> str:
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier"):
            return _dotted(declarator)
        if declarator.type == "init_declarator" or declarator.type in _C_DECLARATORS:
            declarator = declarator.child_by_field_name("declarator")
            continue
        return ""
    return ""


def _ruby_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None and left.type == "constant":
            yield _text(left), node


def _php_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "const_declaration":
        for element in node.named_children:
            if element.type == "const_element":
                name = next((c for c in element.named_children if c.type == "name"), None)
                if name is not None:
                    yield _text(name), node
    elif node.type == "property_declaration":
        for element in node.named_children:
            if element.type == "property_element":
                yield _text(element.child_by_field_name("name")).lstrip("$"), node


def _bash_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "variable_assignment":
        yield _named(node, "name"), node
    elif node.type == "declaration_command":  # export X=1, readonly Y=2
        for child in node.named_children:
            if child.type == "variable_assignment":
                yield _named(child, "name"), node


def _kotlin_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "property_declaration":
        for child in node.named_children:
            if child.type == "variable_declaration":
                name = next((c for c in child.named_children if c.type == "identifier"), None)
                if name is not None:
                    yield _text(name), node


def _swift_names(node: Node) -> Iterable[tuple[str, Node]]:
    if node.type == "property_declaration":
        for pattern in node.children_by_field_name("name"):
            name = pattern.child_by_field_name("bound_identifier")
            if name is not None:
                yield _text(name), node


_NAMES: dict[str, Callable[[Node], Iterable[tuple[str, Node]]]] = {
    "python": _python_names,
    "go": _go_names,
    "java": _field_names,
    "javascript": _js_names,
    "typescript": _js_names,
    "tsx": _js_names,
    "rust": _rust_names,
    "c": _c_names,
    "cpp": _c_names,
    "csharp": _field_names,
    "ruby": _ruby_names,
    "php": _php_names,
    "bash": _bash_names,
    "kotlin": _kotlin_names,
    "swift": _swift_names,
}

# C and C++ definitions inside `#ifndef HEADER_H` ... `#endif` (every header) or
# `extern "C" { ... }` are top-level definitions all the same.
_TRANSPARENT = frozenset(
    {"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef",
     "linkage_specification", "declaration_list"}
)  # fmt: skip
_CONDITION_FIELDS = ("name", "condition", "value")


def _top_nodes(nodes: Iterable[Node], language: str, depth: int = 0) -> Iterable[Node]:
    for node in nodes:
        if language in ("c", "cpp") and node.type in _TRANSPARENT and depth < MAX_NESTING:
            skip = {c.id for f in _CONDITION_FIELDS for c in node.children_by_field_name(f)}
            if node.type == "linkage_specification":
                skip.update(c.id for c in node.named_children if c.type == "string_literal")
            children = [c for c in node.named_children if c.id not in skip]
            yield from _top_nodes(children, language, depth + 1)
        else:
            yield node


_DEFINITIONS: dict[str, Callable[[Node], _Definition | None]] = {
    "python": _python_definition,
    "go": _go_definition,
    "java": _java_definition,
    "javascript": _js_definition,
    "typescript": _js_definition,
    "tsx": _js_definition,
    "rust": _rust_definition,
    "c": _c_definition,
    "cpp": _c_definition,
    "csharp": _csharp_definition,
    "ruby": _ruby_definition,
    "php": _php_definition,
    "bash": _bash_definition,
    "kotlin": _kotlin_definition,
    "swift": _swift_definition,
}


def _members(body: Node) -> Iterable[Node]:
    for child in body.named_children:
        # Java enums keep their methods one level down, after the constants.
        if child.type == "enum_body_declarations":
            yield from child.named_children
        else:
            yield child


# --- rows ----------------------------------------------------------------


def _last_row(node: Node) -> int:
    end = node.end_point
    # Some nodes end at column 0 of the next line (after their newline).
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


def _items(
    nodes: Iterable[Node], define: Callable[[Node], _Definition | None], prefix: str, floor: int
) -> list[_Item]:
    """Row ranges of the nodes in order, with attached comments joined to definitions.

    Rows never overlap: a node sharing a row with the previous item (or with
    the container's header row, `floor`) is folded into that item.
    """
    items: list[_Item] = []
    pending: list[Node] = []  # comments/decorators not yet assigned
    next_row = floor

    def add(first_row: int, last_row: int, definition: _Definition | None, code: bool) -> None:
        nonlocal next_row
        first_row = max(first_row, next_row)
        if last_row < first_row:
            if items:
                items[-1] = _fold(items[-1], last_row, code)
            next_row = max(next_row, last_row + 1)
            return
        symbol = f"{prefix}{definition.name}" if definition is not None else None
        items.append(_Item(first_row, last_row, symbol, definition))
        next_row = last_row + 1

    for node in nodes:
        if node.type in _ATTACHABLE_TYPES:
            pending.append(node)
            continue
        definition = define(node)
        first_row = node.start_point.row
        attached = 0
        if definition is not None:
            # Glue comments that touch the definition (no blank line between).
            for comment in reversed(pending):
                if _last_row(comment) + 1 < first_row:
                    break
                first_row = comment.start_point.row
                attached += 1
        for comment in pending[: len(pending) - attached]:
            add(comment.start_point.row, _last_row(comment), None, code=False)
        pending = []
        add(first_row, _last_row(node), definition, code=True)
    for comment in pending:
        add(comment.start_point.row, _last_row(comment), None, code=False)
    return items


def _fold(item: _Item, last_row: int, code: bool) -> _Item:
    """`item` extended by a node that starts on its last row.

    A trailing comment keeps the item a definition, but several statements on
    one row (minified code, `x = 1; def f(): ...`) are no single definition.
    """
    last_row = max(item.last_row, last_row)
    if code:
        return _Item(item.first_row, last_row)
    return _Item(item.first_row, last_row, item.symbol, item.definition)


# --- chunking ------------------------------------------------------------


_WORDY_RE = re.compile(r"\w")
# Real code nests definitions a handful deep; generated code nesting thousands deep would
# overflow the stack if walked, so members past this depth stay in their parent's windows.
MAX_NESTING = 50


class _CodeChunker:
    def __init__(
        self,
        lines: Lines,
        define: Callable[[Node], _Definition | None],
        budget: ChunkBudget,
    ) -> None:
        self.lines = lines
        self.define = define
        self.max_tokens = budget.max_tokens
        self.overlap_tokens = budget.overlap_tokens
        self.spans: list[tuple[Span, str | None]] = []

    def container(self, items: list[_Item], other_symbol: str | None, depth: int = 0) -> None:
        """Definitions one by one, the statements between them packed together."""
        others: list[_Item] = []
        for item in items:
            if item.definition is None:
                others.append(item)
                continue
            self.pack(others, other_symbol)
            others = []
            self.definition(item, depth)
        self.pack(others, other_symbol)

    def definition(self, item: _Item, depth: int) -> None:
        lines = self.lines
        if lines.cost(item.first_row, item.last_row) <= self.max_tokens:
            self.emit(item.first_row, item.last_row, item.symbol)
            return
        definition = item.definition
        if (
            definition is not None
            and definition.body is not None
            and item.symbol
            and depth < MAX_NESTING
        ):
            floor = definition.node.start_point.row + 1
            members = _items(_members(definition.body), self.define, f"{item.symbol}.", floor)
            methods = [m for m in members if m.definition is not None]
            if methods:
                self.windows(item.first_row, methods[0].first_row - 1, item.symbol)
                self.container(members[members.index(methods[0]) :], item.symbol, depth + 1)
                # Whatever follows the last member: usually just a closing brace.
                tail_start = members[-1].last_row + 1
                self.pack([_Item(tail_start, item.last_row)], item.symbol)
                return
        self.windows(item.first_row, item.last_row, item.symbol)

    def pack(self, items: list[_Item], symbol: str | None) -> None:
        """Greedy runs of whole statements up to the budget; big ones get windows."""
        run: tuple[int, int] | None = None
        for item in items:
            if item.last_row < item.first_row:
                continue
            if run is not None and self.lines.cost(run[0], item.last_row) <= self.max_tokens:
                run = (run[0], item.last_row)
                continue
            if run is not None:
                self.emit(*run, symbol)
                run = None
            if self.lines.cost(item.first_row, item.last_row) <= self.max_tokens:
                run = (item.first_row, item.last_row)
            else:
                self.windows(item.first_row, item.last_row, symbol)
        if run is not None:
            self.emit(*run, symbol)

    def emit(self, first_row: int, last_row: int, symbol: str | None) -> None:
        span = self.lines.span(first_row, last_row)
        if span is not None:
            self.add(span, symbol)

    def windows(self, first_row: int, last_row: int, symbol: str | None) -> None:
        spans = line_windows(self.lines, first_row, last_row, self.max_tokens, self.overlap_tokens)
        for span in spans:
            self.add(span, symbol)

    def add(self, span: Span, symbol: str | None) -> None:
        # A stray "}" or ";" between members is nothing to retrieve on its own, so it joins
        # the chunk before it when that fits; otherwise it stays a chunk of its own, as
        # dropping it would leave files of mostly punctuation (nested brackets) unindexed.
        if self.spans and not _WORDY_RE.search(self.lines.text, span.start, span.end):
            previous, previous_symbol = self.spans[-1]
            if (
                previous.end <= span.start
                and self.lines.cost(previous.first_row, span.last_row) <= self.max_tokens
            ):
                joined = Span(previous.start, span.end, previous.first_row, span.last_row)
                self.spans[-1] = (joined, previous_symbol)
                return
        self.spans.append((span, symbol))


# A line longer than this was generated, not written (minified code, inlined data): it is
# left out of the parse (its definitions would share one line, `_fold`, and its parse
# would cost time and memory for nothing) and cut into windows where it stands, so the
# hand-written rest of its file keeps its symbols.
MAX_PARSED_LINE_CHARS = 10_000


def parse_refusal(text: str, encoded_size: int, budget: ChunkBudget) -> str | None:
    """Why `text` is chunked by line windows rather than parsed, or None to parse it."""
    if encoded_size > budget.code_parse_max_bytes:
        # tree-sitter's tree takes ~200 bytes a byte of source (1 MB: ~210 MB, 8 MB: 1.7 GB)
        return "size"
    return None


def _without_long_lines(text: str) -> str:
    """`text` with each line over MAX_PARSED_LINE_CHARS emptied: the same rows, for the
    parser. A C-speed scan for the first "\n" after each position finds them."""
    kept: list[str] = []
    start = 0
    cut = False
    while True:
        newline = text.find("\n", start, start + MAX_PARSED_LINE_CHARS + 1)
        if newline < 0:
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            if end - start > MAX_PARSED_LINE_CHARS:
                cut = True
                kept.append("")
            else:
                kept.append(text[start:end])
            if end == len(text):
                break
            start = end + 1
            continue
        kept.append(text[start:newline])
        start = newline + 1
    return "\n".join(kept) if cut else text


# Named spans recorded on one chunk: a class of 60 one-line constants is not 60 entries.
MAX_CHUNK_SYMBOLS = 40


def _named_spans(
    nodes: Iterable[Node],
    define: Callable[[Node], _Definition | None],
    names: Callable[[Node], Iterable[tuple[str, Node]]],
    prefix: str = "",
    depth: int = 0,
) -> list[tuple[int, int, str]]:
    """(first row, last row, qualified name) of every definition, its members at any
    depth, and the names `names` finds, in the order of the source."""
    found: list[tuple[int, int, str]] = []
    for node in nodes:
        definition = define(node)
        if definition is not None and definition.name:
            name = f"{prefix}{definition.name}"
            found.append((node.start_point.row, _last_row(node), name))
            if definition.body is not None and depth < MAX_NESTING:
                members = _named_spans(
                    _members(definition.body), define, names, f"{name}.", depth + 1
                )
                found.extend(members)
        for name, part in names(node):
            if name and "\n" not in name:
                found.append((part.start_point.row, _last_row(part), f"{prefix}{name}"))
    return found


def _symbols_within(
    spans: list[tuple[int, int, str]], starts: list[int], span: Span, symbol: str | None
) -> list[dict[str, object]]:
    """The named spans starting on a chunk's lines, other than the chunk's own symbol,
    innermost last: [{"name": "InvoiceRenderer.render_pdf", "line_start": 35, ...}]."""
    within = []
    for first, last, name in spans[bisect_left(starts, span.first_row) :]:
        if first > span.last_row or len(within) == MAX_CHUNK_SYMBOLS:
            break
        if name != symbol:
            name = bounded_symbol(name)
            within.append({"name": name, "line_start": first + 1, "line_end": last + 1})
    return within


def _with_gaps(items: list[_Item], lines: Lines) -> list[_Item]:
    """`items` and, between them, the rows no node covers that hold text (the `#endif` of
    a header whose definitions were taken out of its `#ifndef`), so none is left out."""
    out: list[_Item] = []
    row = 0
    for item in [*items, _Item(len(lines), len(lines))]:
        if item.first_row > row and lines.trim(row, item.first_row - 1) is not None:
            out.append(_Item(row, item.first_row - 1))
        out.append(item)
        row = max(row, item.last_row + 1)
    return out[:-1]


def chunk_code(unit: RawUnit, budget: ChunkBudget) -> list[ChunkPiece] | None:
    """Chunks for a supported language, or None when the windows fallback must run."""
    language = normalize_language(unit.language)
    if language is None:
        return None
    if not unit.text.strip():
        return []
    source = unit.text.encode("utf-8")
    if parse_refusal(unit.text, len(source), budget) is not None:
        return None
    parsed = _without_long_lines(unit.text)
    if parsed is not unit.text:
        source = parsed.encode("utf-8")
    try:
        tree = _parser(language).parse(source)
    except Exception:  # noqa: BLE001 - any grammar/parser failure means "use windows"
        return None
    lines = Lines(unit.text)
    define = _DEFINITIONS[language]
    chunker = _CodeChunker(lines, define, budget)
    top = list(_top_nodes(tree.root_node.named_children, language))
    chunker.container(_with_gaps(_items(top, define, "", 0), lines), None)
    named = sorted(_named_spans(top, define, _NAMES.get(language, _no_names)))
    starts = [first for first, _, _ in named]
    pieces = []
    for span, symbol in chunker.spans:
        extra: dict[str, object] = {"symbol": bounded_symbol(symbol)}
        if within := _symbols_within(named, starts, span, symbol):
            extra["symbols"] = within
        pieces.append(make_piece(unit, span, extra))
    return pieces
