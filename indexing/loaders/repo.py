"""Source repositories: which files to index and what language they are in."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from indexing.loaders.assets import SCRIPT_EXTENSIONS, is_generated_code
from indexing.loaders.text import SNIFF_BYTES, has_unicode_bom

# Languages with a tree-sitter grammar installed: these get syntax-aware chunks.
TREE_SITTER_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
}  # fmt: skip
# Code and config that is chunked by line windows (no grammar installed).
OTHER_CODE_EXTENSIONS = frozenset(
    """.c .h .cpp .hpp .cc .hh .cxx .rs .rb .php .cs .kt .kts .scala .swift .sh .bash .zsh
    .sql .lua .r .pl .pm .yaml .yml .toml .json .ini .cfg .proto .graphql .gradle
    .css .scss .vue .svelte .dart .ex .exs .erl .hs .ml .clj .groovy .ps1 .bat""".split()
)
CODE_FILENAMES = frozenset(
    {"Dockerfile", "Makefile", "CMakeLists.txt", "Jenkinsfile", "Rakefile", "Gemfile", "Procfile"}
)
DOC_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt"})

SKIPPED_DIRS = frozenset(
    """.git .hg .svn node_modules vendor third_party dist build target .venv venv env
    __pycache__ .tox .nox .mypy_cache .pytest_cache .ruff_cache site-packages .idea .vscode
    .next .nuxt coverage .eggs .gradle .terraform bower_components""".split()
)
LOCK_FILES = frozenset(
    """package-lock.json yarn.lock pnpm-lock.yaml poetry.lock Pipfile.lock Cargo.lock
    composer.lock Gemfile.lock go.sum uv.lock pdm.lock npm-shrinkwrap.json""".split()
)
# Generated or minified artefacts: huge single lines, nothing to cite.
SKIPPED_SUFFIXES = (".min.js", ".min.css", ".map", ".bundle.js")


def _suffix(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).suffix.lower()


def detect_language(path: str) -> str | None:
    """The tree-sitter language for a path, or None (including for code without a grammar)."""
    return TREE_SITTER_LANGUAGES.get(_suffix(path))


def is_code_path(path: str) -> bool:
    """Source code or config: indexed as a code document rather than prose."""
    name = PurePosixPath(path.replace("\\", "/")).name
    if name in CODE_FILENAMES:
        return True
    ext = _suffix(path)
    return ext in TREE_SITTER_LANGUAGES or ext in OTHER_CODE_EXTENSIONS


@dataclass(frozen=True)
class RepoFile:
    path: str  # posix, relative to the repository root
    abs_path: Path
    language: str | None
    size: int


class _GitIgnore:
    """The simple subset of a top-level .gitignore.

    Negations ("!") and "**" change which earlier rules apply; rather than get
    those subtly wrong, a file using them is ignored entirely.
    """

    def __init__(self, patterns: list[tuple[re.Pattern[str], bool, bool]]) -> None:
        self._patterns = patterns  # (regex, anchored, dir_only)

    @classmethod
    def load(cls, root: Path) -> _GitIgnore | None:
        try:
            raw = (root / ".gitignore").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        patterns = []
        for line in raw.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("!") or "**" in line or "\\" in line:
                return None
            dir_only = line.endswith("/")
            line = line.strip("/") if dir_only else line
            anchored = "/" in line.rstrip("/") or line.startswith("/")
            line = line.lstrip("/")
            if not line:
                continue
            patterns.append((re.compile(_glob_to_regex(line)), anchored, dir_only))
        return cls(patterns)

    def ignored(self, rel_path: str, *, is_dir: bool) -> bool:
        name = rel_path.rsplit("/", 1)[-1]
        for regex, anchored, dir_only in self._patterns:
            if dir_only and not is_dir:
                continue
            if regex.fullmatch(rel_path if anchored else name):
                return True
        return False


def _glob_to_regex(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def read_head(path: Path) -> bytes | None:
    """The first bytes of a file (None when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return handle.read(SNIFF_BYTES)
    except OSError:
        return None


def _is_skipped_content(rel: str, path: Path) -> bool:
    """Binary (or unreadable) files, and scripts or styles that are minified or bundled."""
    head = read_head(path)
    if head is None or b"\x00" in head and not has_unicode_bom(head):
        return True
    if _suffix(rel) in SCRIPT_EXTENSIONS | {".css"}:
        return is_generated_code(rel, head.decode("utf-8", errors="replace"))
    return False


def _wanted_file(name: str) -> bool:
    if name in LOCK_FILES or name.lower().endswith(SKIPPED_SUFFIXES):
        return False
    return is_code_path(name) or _suffix(name) in DOC_EXTENSIONS


def walk_repository(root: Path, *, max_file_bytes: int = 1_000_000) -> Iterator[RepoFile]:
    """Indexable files under `root` in sorted path order, never following symlinks."""
    root = Path(root)
    yield from _walk(root, "", _GitIgnore.load(root), max_file_bytes)


def _walk(
    directory: Path, prefix: str, gitignore: _GitIgnore | None, max_file_bytes: int
) -> Iterator[RepoFile]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        rel = f"{prefix}{entry.name}"
        if entry.is_symlink():
            continue  # may point outside the repository, or loop
        if entry.is_dir(follow_symlinks=False):
            if entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info"):
                continue
            if gitignore and gitignore.ignored(rel, is_dir=True):
                continue
            yield from _walk(Path(entry.path), rel + "/", gitignore, max_file_bytes)
            continue
        if not entry.is_file(follow_symlinks=False) or not _wanted_file(entry.name):
            continue
        if gitignore and gitignore.ignored(rel, is_dir=False):
            continue
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        if size == 0 or size > max_file_bytes:
            continue
        path = Path(entry.path)
        if _is_skipped_content(rel, path):
            continue
        yield RepoFile(path=rel, abs_path=path, language=detect_language(rel), size=size)
