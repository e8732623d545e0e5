"""Source repositories: which files to index and what language they are in.

A folder git answers for (a work tree, git on PATH) is listed by git itself: its
tracked files, and the untracked ones its ignore rules (every .gitignore,
.git/info/exclude, core.excludesFile) leave in. Submodules and repositories nested
inside are not walked: each is a repository of its own, ingested on its own. Without
git, pathspec's implementation of the same rules reads the .gitignore files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from indexing.loaders.assets import SCRIPT_EXTENSIONS, is_generated_code
from indexing.loaders.text import SNIFF_BYTES, has_unicode_bom
from knowledge.forges import without_credentials

# Languages with a tree-sitter grammar installed: these get syntax-aware chunks.
TREE_SITTER_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".hpp": "cpp", ".cc": "cpp", ".hh": "cpp", ".cxx": "cpp", ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby",
    ".php": "php",
    ".sh": "bash", ".bash": "bash",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
}  # fmt: skip
# Code and config that is chunked by line windows (no grammar installed).
OTHER_CODE_EXTENSIONS = frozenset(
    """.c .h .cpp .hpp .cc .hh .cxx .rs .rb .php .cs .kt .kts .scala .swift .sh .bash .zsh
    .sql .lua .r .pl .pm .yaml .yml .toml .json .ini .cfg .proto .graphql .gradle
    .css .scss .vue .svelte .dart .ex .exs .erl .hs .ml .clj .groovy .ps1 .bat
    .tf .tfvars .hcl""".split()
)
CODE_FILENAMES = frozenset(
    {"Dockerfile", "Makefile", "CMakeLists.txt", "Jenkinsfile", "Rakefile", "Gemfile", "Procfile"}
)
DOC_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".ipynb"})

# Third-party code copied in: skipped even where git tracks it.
VENDORED_DIRS = frozenset(
    """.git .hg .svn node_modules bower_components vendor third_party site-packages .venv
    venv""".split()
)
# Build output, caches and environments: skipped where git does not track them (and in
# a folder git does not answer for); a tracked `build/` or `env/` is source.
BUILD_DIRS = frozenset(
    """dist build target env __pycache__ .tox .nox .mypy_cache .pytest_cache .ruff_cache
    .idea .vscode .next .nuxt coverage .eggs .gradle .terraform""".split()
)
SKIPPED_DIRS = VENDORED_DIRS | BUILD_DIRS
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
    path: str  # posix, relative to the repository's top level
    abs_path: Path
    language: str | None
    size: int


# Why a file of the tree is not indexed (Skipped.reason); the ingest summary counts them.
IGNORED = "ignored by git"
VENDORED = "vendored"  # also generated code, lock files, minified bundles, build output
TOO_LARGE = "too large"
BINARY = "binary"
UNSUPPORTED = "unsupported type"
EMPTY = "empty"
SUBMODULE = "submodule"  # a submodule or a repository nested inside: ingested on its own
SKIP_REASONS = (IGNORED, VENDORED, TOO_LARGE, BINARY, UNSUPPORTED)


@dataclass(frozen=True)
class Skipped:
    path: str  # posix, relative to the top level; a folder skipped whole ends with "/"
    reason: str


class RepositoryError(ValueError):
    """A repository whose rules cannot be read: walking it without them could index
    what its owner keeps out of git (secrets)."""


@dataclass(frozen=True)
class RepoLayout:
    """Where a folder lies in its repository: the top level its paths are relative to,
    and the folder walked (`under`, '' for the whole repository)."""

    top: Path
    under: str
    git: bool  # git answers for it (a work tree, git on PATH)


class RepoWalk:
    """A repository's files, as `walk_repository` selects them, and those it skipped.

    Iterate it for the files and the skipped entries as they are found (`RepoFile` or
    `Skipped`): a tree past a file limit can be refused before all of it is read.
    `rules` says which ignore rules applied (for the ingest output).
    """

    def __init__(self, folder: Path, *, max_file_bytes: int = 1_000_000) -> None:
        self.layout = repository_layout(folder)
        self.max_file_bytes = max_file_bytes
        self.rules = ""

    def __iter__(self) -> Iterator[RepoFile | Skipped]:
        if self.layout.git:
            try:
                listed = _git_listing(self.layout)
            except RepositoryError as exc:  # git refused (not the owner's repository, …)
                self.rules = f"git failed ({exc}); the .gitignore files were read instead"
            else:
                self.rules = "git (.gitignore files, .git/info/exclude, core.excludesFile)"
                yield from _git_walk(self.layout, listed, self.max_file_bytes)
                return
        else:
            self.rules = ".gitignore files and .git/info/exclude (git not asked)"
        yield from _tree_walk(self.layout, self.max_file_bytes)


def walk_repository(root: Path, *, max_file_bytes: int = 1_000_000) -> Iterator[RepoFile]:
    """Indexable files under `root` in sorted path order, never following symlinks;
    paths relative to the repository's top level (see `RepoWalk`)."""
    for entry in RepoWalk(Path(root), max_file_bytes=max_file_bytes):
        if isinstance(entry, RepoFile):
            yield entry


# ------------------------------------------------------------------ where the tree is


def git_entry(folder: Path) -> bool:
    """Whether `folder` is a git work tree's top: it holds a `.git` folder, or a `.git`
    file naming one ("gitdir: …", a worktree's or a submodule's)."""
    dot_git = folder / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        return True
    if dot_git.is_file():
        try:
            with dot_git.open("rb") as handle:
                return handle.read(8) == b"gitdir: "
        except OSError:
            return False
    return False


def repository_layout(folder: Path) -> RepoLayout:
    """The repository `folder` is (in): git's own answer when git is on PATH, else the
    nearest folder up with a `.git` entry; a folder in no repository is its own top."""
    folder = Path(os.path.realpath(folder))
    if shutil.which("git"):
        try:
            out = _git(folder, "rev-parse", "--show-toplevel")
        except RepositoryError:
            out = b""
        top = Path(os.path.realpath(os.fsdecode(out.rstrip(b"\n")))) if out.strip() else None
        if top is not None and folder.is_relative_to(top):
            return RepoLayout(top, _relative(folder, top), git=True)
    for candidate in (folder, *folder.parents):
        if git_entry(candidate):
            return RepoLayout(candidate, _relative(folder, candidate), git=False)
    return RepoLayout(folder, "", git=False)


def _relative(folder: Path, top: Path) -> str:
    rel = folder.relative_to(top).as_posix()
    return "" if rel == "." else rel


# Git reads a repository's config: none of it may run a program while we list files.
_GIT_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "--literal-pathspecs")


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(
            ["git", *_GIT_SAFE, *args], cwd=cwd, input=stdin, capture_output=True,
            env=env, timeout=300, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RepositoryError(f"git {args[0]}: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RepositoryError(f"git {args[0]}: {message[0] if message else done.returncode}")
    return done.stdout


# ------------------------------------------------------------------ git work trees


@dataclass(frozen=True)
class _Listing:
    tracked: list[str]
    untracked: list[str]
    ignored: list[str]  # a folder ignored whole ends with "/"


def _split(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _git_listing(layout: RepoLayout) -> _Listing:
    scope = ["--", layout.under] if layout.under else []
    ls = ("ls-files", "-z", "--full-name")
    return _Listing(
        tracked=_split(_git(layout.top, *ls, "--cached", *scope)),
        untracked=_split(_git(layout.top, *ls, "--others", "--exclude-standard", *scope)),
        ignored=_split(_git(
            layout.top, *ls, "--others", "--ignored", "--exclude-standard", "--directory",
            *scope,
        )),
    )


def _git_walk(
    layout: RepoLayout, listed: _Listing, max_file_bytes: int
) -> Iterator[RepoFile | Skipped]:
    """What git lists: tracked files always (git keeps them whatever .gitignore says),
    untracked ones it does not ignore; name-based folder skips for untracked files only."""
    folders: list[str] = []
    for path in sorted(listed.ignored):  # a folder ignored whole, then not what it holds
        if not any(path.startswith(folder) for folder in folders):
            yield Skipped(path, IGNORED)
        if path.endswith("/"):
            folders.append(path)
    tracked = set(listed.tracked)
    candidates: list[tuple[str, Path, int]] = []
    for rel in sorted(tracked | set(listed.untracked)):
        if rel.endswith("/"):  # an untracked repository nested inside
            yield Skipped(rel, SUBMODULE)
            continue
        path = layout.top / rel
        try:
            st = os.lstat(path)
        except OSError:
            continue  # deleted from the work tree, still in the index
        if stat.S_ISDIR(st.st_mode):  # a submodule's folder
            yield Skipped(rel + "/", SUBMODULE)
            continue
        if not stat.S_ISREG(st.st_mode):
            yield Skipped(rel, UNSUPPORTED)  # a symlink: may lead outside the repository
            continue
        if reason := _by_name(rel, tracked=rel in tracked):
            yield Skipped(rel, reason)
            continue
        candidates.append((rel, path, st.st_size))
    generated = _linguist_generated(layout.top, [rel for rel, _p, _s in candidates])
    for rel, path, size in candidates:
        if rel in generated:
            yield Skipped(rel, VENDORED)
        else:
            yield _by_content(rel, path, size, max_file_bytes)


def _linguist_generated(top: Path, paths: list[str]) -> set[str]:
    """The paths .gitattributes marks `linguist-generated`: one git call for the walk."""
    if not paths:
        return set()
    out = _split(_git(
        top, "check-attr", "-z", "--stdin", "linguist-generated",
        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths),
    ))
    # -z: path, attribute, value, path, attribute, value, …
    return {
        out[i] for i in range(0, len(out) - 2, 3) if out[i + 2] in ("set", "true")
    }


# ------------------------------------------------------------------ other folders


def _tree_walk(layout: RepoLayout, max_file_bytes: int) -> Iterator[RepoFile | Skipped]:
    """Walk the folder without git: its .gitignore files (and those above it up to the
    top level) and .git/info/exclude, read by pathspec's implementation of git's rules."""
    rules: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = _git_dir(layout.top)
    if exclude is not None and (spec := _rules_in(exclude / "info" / "exclude")):
        rules.append(("", spec))
    # The rules of the folders above the one walked (that one's own are read by _walk).
    parts = layout.under.split("/") if layout.under else []
    for depth in range(len(parts)):
        prefix = "".join(f"{p}/" for p in parts[:depth])
        if spec := _rules_in(layout.top / prefix / ".gitignore"):
            rules.append((prefix, spec))
    start = f"{layout.under}/" if layout.under else ""
    generated = _generated_spec(layout.top)
    for entry in _walk(layout.top / layout.under, start, rules, max_file_bytes):
        if isinstance(entry, RepoFile) and generated and generated.match_file(entry.path):
            yield Skipped(entry.path, VENDORED)
        else:
            yield entry


def _generated_spec(top: Path) -> pathspec.GitIgnoreSpec | None:
    """The patterns the top-level .gitattributes marks `linguist-generated` (without git,
    nested .gitattributes files are not read)."""
    try:
        raw = (top / ".gitattributes").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    patterns = [
        fields[0] for line in raw.splitlines()
        if len(fields := line.split()) > 1 and not fields[0].startswith("#")
        and any(a in ("linguist-generated", "linguist-generated=true") for a in fields[1:])
    ]
    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


def _git_dir(top: Path) -> Path | None:
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        line = dot_git.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = Path(line.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else top / gitdir
    try:  # a worktree's rules are its main repository's (commondir)
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
        return (gitdir / common).resolve()
    except (OSError, UnicodeDecodeError):
        return gitdir


def _rules_in(path: Path) -> pathspec.GitIgnoreSpec | None:
    """A .gitignore (or info/exclude) read whole; RepositoryError when it is there but
    cannot be read: its rules may keep secrets out."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RepositoryError(
            f"{path} cannot be read ({exc.strerror or exc}); without its rules, files it "
            "keeps out of git would be indexed"
        ) from None
    lines = raw.decode("utf-8", "surrogateescape").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _ignored(rules: list[tuple[str, pathspec.GitIgnoreSpec]], rel: str, *, is_dir: bool) -> bool:
    """Git's precedence: the deepest .gitignore with a matching rule decides, its last
    matching rule first (a `!` re-includes)."""
    for base, spec in reversed(rules):
        if not rel.startswith(base):
            continue
        sub = rel[len(base):] + ("/" if is_dir else "")
        result = spec.check_file(sub)
        if result.include is not None:
            return bool(result.include)
    return False


def _walk(
    directory: Path, prefix: str, rules: list[tuple[str, pathspec.GitIgnoreSpec]],
    max_file_bytes: int,
) -> Iterator[RepoFile | Skipped]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    if spec := _rules_in(directory / ".gitignore"):
        rules = [*rules, (prefix, spec)]
    for entry in entries:
        rel = f"{prefix}{entry.name}"
        if entry.name == ".git":
            continue
        if entry.is_symlink():
            yield Skipped(rel, UNSUPPORTED)  # may point outside the repository, or loop
            continue
        if entry.is_dir(follow_symlinks=False):
            if _ignored(rules, rel, is_dir=True):
                yield Skipped(rel + "/", IGNORED)
            elif _skipped_folder(entry.name, tracked=False):
                yield Skipped(rel + "/", VENDORED)
            elif git_entry(Path(entry.path)):
                yield Skipped(rel + "/", SUBMODULE)
            else:
                yield from _walk(Path(entry.path), rel + "/", rules, max_file_bytes)
            continue
        if _ignored(rules, rel, is_dir=False):
            yield Skipped(rel, IGNORED)
            continue
        if not entry.is_file(follow_symlinks=False):
            yield Skipped(rel, UNSUPPORTED)  # a FIFO, a device: counted, never opened
            continue
        if reason := _by_name(rel, tracked=False, folders=False):
            yield Skipped(rel, reason)
            continue
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        yield _by_content(rel, Path(entry.path), size, max_file_bytes)


# ------------------------------------------------------------------ one file


def _skipped_folder(name: str, *, tracked: bool) -> bool:
    if name in VENDORED_DIRS:
        return True
    return not tracked and (name in BUILD_DIRS or name.endswith(".egg-info"))


def _by_name(rel: str, *, tracked: bool, folders: bool = True) -> str:
    """Why a file is skipped by its path alone ('' if it is not)."""
    *parents, name = rel.split("/")
    if folders and any(_skipped_folder(p, tracked=tracked) for p in parents):
        return VENDORED
    if name in LOCK_FILES or name.lower().endswith(SKIPPED_SUFFIXES):
        return VENDORED
    if not (is_code_path(name) or _suffix(name) in DOC_EXTENSIONS):
        return UNSUPPORTED
    return ""


def _by_content(rel: str, path: Path, size: int, max_file_bytes: int) -> RepoFile | Skipped:
    if size == 0:
        return Skipped(rel, EMPTY)
    if size > max_file_bytes:
        return Skipped(rel, TOO_LARGE)
    head = read_head(path)
    if head is None or b"\x00" in head and not has_unicode_bom(head):
        return Skipped(rel, BINARY)
    text = head.decode("utf-8", errors="replace")
    if _suffix(rel) in SCRIPT_EXTENSIONS | {".css"} and is_generated_code(rel, text):
        return Skipped(rel, VENDORED)
    if is_generated_source(text):
        return Skipped(rel, VENDORED)
    return RepoFile(path=rel, abs_path=path, language=detect_language(rel), size=size)


# Lines a generator's header is looked for in.
_HEADER_LINES = 10
_GENERATED_HEADER = re.compile(
    r"Code generated .*DO NOT EDIT|Generated by the protocol buffer compiler\.\s+DO NOT EDIT!"
    r"|@generated\b"
)


def is_generated_source(head: str) -> bool:
    """A generator's header in the first lines: Go's "Code generated … DO NOT EDIT.",
    protoc's "Generated by the protocol buffer compiler.  DO NOT EDIT!", `@generated`."""
    lines = head.split("\n", _HEADER_LINES)[:_HEADER_LINES]
    return any(_GENERATED_HEADER.search(line) for line in lines)


def read_head(path: Path) -> bytes | None:
    """The first bytes of a file (None when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return handle.read(SNIFF_BYTES)
    except OSError:
        return None


# ------------------------------------------------------------------ the commit indexed


@dataclass(frozen=True)
class Revision:
    """Where a work tree stands: its HEAD commit, its branch ('' when detached) and its
    remote's URL, credentials left out ('' without one)."""

    commit: str
    branch: str
    remote: str


def head_revision(top: Path) -> Revision | None:
    """The work tree's HEAD (None without git, or before its first commit). The remote is
    the branch's upstream remote, else `origin`, else the only one."""
    if not shutil.which("git"):
        return None
    try:
        commit = _git(top, "rev-parse", "--verify", "-q", "HEAD^{commit}").decode().strip()
    except RepositoryError:
        return None
    try:
        branch = _git(top, "symbolic-ref", "-q", "--short", "HEAD").decode().strip()
    except RepositoryError:
        branch = ""  # detached (a CI checkout, a tag)
    try:
        listed = _split(_git(
            top, "config", "-z", "--get-regexp", r"^(remote\..*\.url|branch\..*\.remote)$"
        ))
    except RepositoryError:
        listed = []  # none set: git exits 1
    config: dict[str, str] = {}
    for entry in listed:  # -z: "key\nvalue"
        key, _, value = entry.partition("\n")
        config.setdefault(key, value)
    remotes = {k[len("remote."):-len(".url")]: v for k, v in config.items()
               if k.startswith("remote.") and k.endswith(".url")}
    name = config.get(f"branch.{branch}.remote", "") if branch else ""
    if name not in remotes:
        only = next(iter(remotes)) if len(remotes) == 1 else ""
        name = "origin" if "origin" in remotes else only
    return Revision(commit, branch, remotes.get(name, ""))


def committed_blobs(top: Path, paths: Sequence[str] = ()) -> dict[str, str]:
    """{path from the top level: its blob id} of every file HEAD holds, or of `paths`
    ({} without git or a commit): a file whose bytes hash to its blob is as that commit
    has it."""
    try:
        out = _git(top, "ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *paths)
    except RepositoryError:
        return {}
    blobs: dict[str, str] = {}
    for entry in _split(out):  # "<mode> blob <id>\t<path>"
        info, _, path = entry.partition("\t")
        fields = info.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs[path] = fields[2]
    return blobs


def git_blob_id(data: bytes, *, sha256: bool = False) -> str:
    """The id git gives a file of these bytes (`git hash-object`)."""
    digest = hashlib.sha256() if sha256 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class RepositoryRevision:
    """A work tree's HEAD, and the blob of each file there: a file indexed with those
    bytes is cited with a link to that commit."""

    revision: Revision | None
    blobs: dict[str, str]

    @classmethod
    def of(cls, top: Path, paths: Sequence[str] = ()) -> RepositoryRevision:
        """HEAD, and the blobs of `paths` (all files when none are named)."""
        revision = head_revision(top)
        return cls(revision, committed_blobs(top, paths) if revision else {})

    def of_file(self, path: str) -> dict[str, str] | None:
        """Document.metadata["git"] of the file at `path` (None outside a commit): the
        commit, the branch, the remote (its credentials left out), the file's blob."""
        if self.revision is None:
            return None
        return {
            "commit": self.revision.commit, "branch": self.revision.branch,
            "remote": without_credentials(self.revision.remote),
            "blob": self.blobs.get(path, ""),
        }
