"""Git repository addresses, and shallow clones of them, bounded in time and size.

`manage.py ingest git@github.com:acme/billing.git` clones the repository's default
branch (its last commit only) and indexes the clone as it would the work tree; its
remote is recorded, so that citations link to the forge. The URL given may carry
credentials (`https://ci:token@host/…`): they are used to clone, then removed from the
clone's config, and never shown.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from indexing.loaders.repo import RepositoryError
from knowledge.forges import without_credentials

# A URL whose scheme only git speaks; https and http are a web page's too (see is_git_url).
_GIT_SCHEMES = ("ssh://", "git://", "git+ssh://", "ssh+git://", "file://")
# scp-like syntax: user@host:path (the user required: `a:b` may be a local file's name).
_SCP = re.compile(r"^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:(?!//)\S+$")


def is_git_url(location: str, *, repository: bool = False) -> bool:
    """Whether `location` names a git repository to clone: an ssh://, git:// or file://
    URL, an scp-like `user@host:owner/repo`, or an http(s) URL ending in `.git`; with
    `repository` (--repo), any http(s) URL (`https://github.com/acme/billing`), which is
    otherwise read as a web page."""
    location = location.strip()
    lowered = location.lower()
    if lowered.startswith(_GIT_SCHEMES) or _SCP.match(location):
        return True
    if lowered.startswith(("http://", "https://")):
        try:
            path = urlsplit(location).path
        except ValueError:
            return False
        return repository or path.rstrip("/").endswith(".git")
    return False


def clone_folder(url: str, under: Path) -> Path:
    """Where the clone of `url` is kept below `under`: one folder per address (its
    credentials left out), named after the repository, so that a clone made again is
    the same documents."""
    public = without_credentials(url)
    name = re.sub(r"\.git$", "", re.split(r"[/:]", public.rstrip("/"))[-1]) or "repository"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "repository"
    digest = hashlib.sha256(public.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return under / digest / name


def clone(url: str, dest: Path, *, timeout: float, max_bytes: int) -> Path:
    """Clone `url`'s default branch, its last commit only, to `dest` (replacing an
    earlier clone there once the new one is complete) and return `dest`.

    RepositoryError, saying why in git's words (credentials left out), when git fails,
    takes longer than `timeout` seconds or the clone grows past `max_bytes`; nothing of
    a failed clone is kept, and an earlier one stays as it was.
    """
    if not shutil.which("git"):
        raise RepositoryError("git is not installed (it is needed to clone a repository)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".clone-", dir=dest.parent))
    try:
        target = work / dest.name
        _run_clone(url, target, timeout=timeout, max_bytes=max_bytes)
        # The token an https URL carried would stay in .git/config, readable to anyone
        # who reads the clone: the remote is kept without it.
        public = without_credentials(url)
        _git_in(target, "remote", "set-url", "origin", public, timeout=timeout)
        previous = work / f"{dest.name}.previous"
        if dest.exists():
            dest.rename(previous)
        target.rename(dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return dest


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # Never wait for someone to type a password or accept a host key: fail instead.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return env


def _run_clone(url: str, target: Path, *, timeout: float, max_bytes: int) -> None:
    command = [
        "git", "-c", "core.fsmonitor=false", "-c", "advice.detachedHead=false",
        "clone", "--quiet", "--depth", "1", "--single-branch", "--no-tags",
        "--no-recurse-submodules", "--", url, str(target),
    ]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            env=_environment(),
        )
        deadline = time.monotonic() + timeout
        problem = ""
        while process.poll() is None:
            if time.monotonic() > deadline:
                problem = f"it took longer than {timeout:g} s (GIT_CLONE_TIMEOUT)"
            elif _size(target.parent) > max_bytes:
                problem = f"it grew past {max_bytes:,} bytes (GIT_CLONE_MAX_BYTES)"
            if problem:
                process.kill()
                process.wait()
                raise RepositoryError(f"cloning {without_credentials(url)} stopped: {problem}")
            time.sleep(0.5)
        if process.returncode != 0:
            stderr.seek(0)
            raise RepositoryError(
                f"cloning {without_credentials(url)} failed: "
                f"{_git_message(stderr.read(), url) or f'git exited {process.returncode}'}"
            )
    if _size(target.parent) > max_bytes:  # grew past it between two looks
        raise RepositoryError(
            f"cloning {without_credentials(url)} stopped: it grew past {max_bytes:,} bytes "
            "(GIT_CLONE_MAX_BYTES)"
        )


def _git_message(raw: bytes, url: str) -> str:
    """git's own reason ("fatal: …" lines), the URL's credentials left out."""
    lines = raw.decode("utf-8", "replace").splitlines()
    said = [line.strip() for line in lines if line.startswith(("fatal:", "error:"))] or [
        line.strip() for line in lines if line.strip()
    ]
    message = " ".join(said)[:1000].replace(url, without_credentials(url))
    try:
        password, user = urlsplit(url).password, urlsplit(url).username
    except ValueError:
        password = user = None
    for secret in (password, user):
        if secret:
            message = message.replace(secret, "***")
    return message


def _git_in(repo: Path, *args: str, timeout: float) -> None:
    try:
        subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args], cwd=repo, env=_environment(),
            stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RepositoryError(f"git {args[0]} in the clone failed: {exc}") from None


def _size(folder: Path) -> int:
    """Bytes of the files under `folder` (a clone in progress: files come and go)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total
