"""Git repository addresses, and shallow clones of them, bounded in time and size.

`manage.py ingest git@github.com:acme/billing.git` clones the repository's default
branch (its last commit only) and indexes the clone as it would the work tree; its
remote is recorded, so that citations link to the forge. The URL given may carry
credentials (`https://ci:token@host/…`): they are kept beside the clone, readable by the
server's user only (`credentials_path`), never in its .git/config, and every later git
command on it (a fetch: `stale`, MCP's check; a clone of the address again) gives them
to git as the first clone did: through a credential helper reading them from git's
environment, never on its command line (which `ps` shows) nor in a message.

An address an outsider gave (the API, the admin, MCP) is first passed through
`check_remote`: http(s) only, its host's addresses checked as a web page's are, and the
clone then made with `RemoteAccess`, which holds git to that protocol and those
addresses (no redirect, no remote helper, no credential helper or config of the
server's own).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from indexing.loaders.repo import RepositoryError
from indexing.loaders.web import Resolver, check_url, system_resolver
from indexing.types import IngestError
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


class RemoteRefused(RepositoryError):
    """An address an outsider may not have cloned (a local path, a transport other than
    http(s), a private or reserved host)."""


@dataclass(frozen=True)
class RemoteAccess:
    """What git may do for one outsider's address: `protocols` (GIT_ALLOW_PROTOCOL, which
    also holds submodules and `ext::`-style remote helpers to it) and `config`, `-c`
    settings given on the command line; neither the system's nor the server user's git
    config is read (no credential helper, `insteadOf` rewrite or hook of theirs)."""

    protocols: str
    config: tuple[str, ...] = ()


def check_remote(
    url: str, *, allow_private: bool, resolve: Resolver = system_resolver
) -> RemoteAccess:
    """How git may reach `url`, an address an outsider gave; RemoteRefused saying why not.

    Only http and https: an ssh address would be cloned with the server's own keys, and
    git://, file:// and `transport::address` reach what the web fetcher may not. The host
    is resolved here and checked by the web fetcher's rules (`check_url`: no private,
    loopback or reserved address unless `allow_private`), and git then connects to those
    very addresses (curl's resolve list: a DNS answer that changes meanwhile changes
    nothing) and follows no redirect (to another host, unchecked).
    """
    url = url.strip()
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if not scheme:
        if "::" in url.split("/", 1)[0]:
            raise RemoteRefused(
                f"{without_credentials(url)}: git's remote helpers (ext::, fd::…) are refused"
            )
        raise RemoteRefused(
            f"{without_credentials(url)} is not a repository's http(s) address "
            "(https://host/owner/repo.git)"
        )
    if scheme not in ("http", "https"):
        raise RemoteRefused(
            f"{without_credentials(url)}: only http and https repository addresses may be "
            f"added here, not {scheme}:// (an operator's `manage.py ingest` clones others)"
        )
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        raise RemoteRefused(f"{without_credentials(url)!r} contains spaces or control characters")
    _check_host_spelling(url)
    try:
        destination = check_url(url, allow_private=allow_private, resolve=resolve)
    except IngestError as exc:
        raise RemoteRefused(str(exc).replace(url, without_credentials(url))) from None
    config = ["http.followRedirects=false"]
    if ":" not in destination.host:  # an IPv6 literal is no name to resolve
        config.append(
            f"http.curloptResolve={destination.host}:{destination.port}:"
            + ",".join(f"[{a}]" if ":" in a else a for a in destination.addresses)
        )
    return RemoteAccess(protocols=scheme, config=tuple(config))


# A host as curl reads it, character for character: a name's letters, digits, '-', '_'
# and '.', or an IPv6 literal in brackets. Anything else ('%2e', '\\', non-ASCII) curl
# may decode or normalise into another name than the one checked and pinned.
_PLAIN_HOST = re.compile(r"^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])$")


def _check_host_spelling(url: str) -> None:
    authority = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    host = authority.rpartition("@")[2]
    if not host.startswith("["):
        host = host.split(":", 1)[0]
    elif "]" in host:
        host = host[: host.index("]") + 1]
    if not _PLAIN_HOST.match(host):
        raise RemoteRefused(
            f"{without_credentials(url)}: its host may hold only letters, digits, '-', '_' "
            "and '.' (no %-escape; a non-ASCII name in its xn-- form), or be an IP address"
        )


@dataclass(frozen=True)
class Credentials:
    """An http(s) address's user name and password (`https://ci:token@host/…`)."""

    username: str
    password: str

    def __repr__(self) -> str:  # never in a traceback's locals or a log line
        return "Credentials(***)"


def split_credentials(url: str) -> tuple[str, Credentials | None]:
    """(`url` without its user name and password, those): an http(s) address's only, an
    ssh one's user is its account, kept. RepositoryError for credentials git could not
    be given (a control character, %-escaped or not)."""
    found = _HTTP_USERINFO.match(url)
    if found is None:
        return url, None
    username, _, password = found.group(2).partition(":")
    credentials = Credentials(unquote(username), unquote(password))
    if any(ord(c) < 0x20 or c == "\x7f" for c in credentials.username + credentials.password):
        raise RepositoryError(
            f"{without_credentials(url)}: its user name or password holds a control character"
        )
    return found.group(1) + url[found.end():], credentials


# `http(s)://user:password@`: the authority ends at the first / ? or #, its user info at
# the last @ before them.
_HTTP_USERINFO = re.compile(r"^(\s*https?://)([^/?#]*)@", re.IGNORECASE)


def credentials_path(repo: Path) -> Path:
    """Where the credentials a clone was made with are kept: beside it, not in it (its
    files are read and served; its .git/config is shown by `git remote -v`)."""
    return repo.parent / f"{repo.name}.credentials"


def kept_credentials(repo: Path) -> Credentials | None:
    """The credentials the clone at `repo` was made with; None when it needed none."""
    try:
        kept = json.loads(credentials_path(repo).read_text(encoding="utf-8"))
        return Credentials(str(kept["username"]), str(kept["password"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RepositoryError(
            f"the credentials kept for {repo.name} cannot be read ({type(exc).__name__}); "
            "clone its address again with them"
        ) from None


def _keep_credentials(repo: Path, credentials: Credentials) -> None:
    path = credentials_path(repo)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    # Made 0600 from the start: never, even for an instant, readable by others.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump({"username": credentials.username, "password": credentials.password},
                      handle)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def local_access() -> RemoteAccess:
    """A file:// address the caller has checked (a server path it may read)."""
    return RemoteAccess(protocols="file")


def clone_folder(url: str, under: Path) -> Path:
    """Where the clone of `url` is kept below `under`: one folder per address (its
    credentials left out, and spelled one way: `HTTPS://Host:443/x.git/?a=1` is
    `https://host/x.git`), named after the repository, so that a clone made again is
    the same documents."""
    public = _address_key(without_credentials(url))
    name = re.sub(r"\.git$", "", re.split(r"[/:]", public.rstrip("/"))[-1]) or "repository"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "repository"
    digest = hashlib.sha256(public.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return under / digest / name


def _address_key(url: str) -> str:
    """An http(s) address as one spelling of it (scheme and host lower case, no default
    port, query, fragment or trailing '/'); any other address as it is."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return url
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if port and port != {"http": 80, "https": 443}[scheme]:
        host += f":{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def clone(
    url: str, dest: Path, *, timeout: float, max_bytes: int, access: RemoteAccess | None = None
) -> Path:
    """Clone `url`'s default branch, its last commit only, to `dest` (replacing an
    earlier clone there once the new one is complete) and return `dest`.

    RepositoryError, saying why in git's words (credentials left out), when git fails,
    takes longer than `timeout` seconds or the clone grows past `max_bytes`; nothing of
    a failed clone is kept, and an earlier one stays as it was. `access`: an outsider's
    address, as `check_remote` allows it (None: the operator's, read with their config).
    The credentials `url` carries are kept with the clone (`credentials_path`); an
    address given without any is cloned with those of the earlier clone at `dest`, if
    it was made with some.
    """
    if not shutil.which("git"):
        raise RepositoryError("git is not installed (it is needed to clone a repository)")
    url, given = split_credentials(_lower_scheme(url))
    credentials = given or kept_credentials(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".clone-", dir=dest.parent))
    try:
        target = work / dest.name
        _run_clone(url, target, timeout=timeout, max_bytes=max_bytes, access=access,
                   credentials=credentials)
        # Without its query and fragment too: one spelling of the address.
        _git_in(target, "remote", "set-url", "origin", without_credentials(url),
                timeout=timeout)
        previous = work / f"{dest.name}.previous"
        if dest.exists():
            dest.rename(previous)
        target.rename(dest)
        if credentials is not None:
            _keep_credentials(dest, credentials)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):  # the address's folder, unless an earlier clone's
            dest.parent.rmdir()
        raise
    shutil.rmtree(work, ignore_errors=True)
    return dest


# Variables naming a proxy (curl reads them in either case): for an outsider's address
# git would send its requests there, where the name is resolved again (past the pinned
# addresses) and internal hosts may be reachable.
_PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"}


def _lower_scheme(url: str) -> str:
    """`url` with its scheme in lower case: GIT_ALLOW_PROTOCOL is matched case for case
    (HTTPS://… would be refused as "transport 'HTTPS' not allowed")."""
    scheme, sep, rest = url.partition("://")
    return scheme.lower() + sep + rest if sep and "/" not in scheme else url


# Where the credential helper (`_options`) reads them: git's environment is readable by
# the server's user only, its command line by anyone on the host.
_USERNAME_VARIABLE = "VERITY_GIT_USERNAME"
_PASSWORD_VARIABLE = "VERITY_GIT_PASSWORD"
# A shell function git runs as `f get` (`f store`/`f erase` after: nothing to do); git
# writes the request to its stdin, read lest git meet a closed pipe.
_CREDENTIAL_HELPER = (
    '!f() { cat >/dev/null; test "$1" = get || exit 0; '
    """printf 'username=%s\\npassword=%s\\n' "$VERITY_GIT_USERNAME" "$VERITY_GIT_PASSWORD"; }; f"""
)


def _environment(
    access: RemoteAccess | None = None, credentials: Credentials | None = None
) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith("GIT_") and k not in (_USERNAME_VARIABLE, _PASSWORD_VARIABLE)
    }
    if credentials is not None:
        env[_USERNAME_VARIABLE] = credentials.username
        env[_PASSWORD_VARIABLE] = credentials.password
    if access is not None:
        env = {k: v for k, v in env.items() if k.lower() not in _PROXY_VARIABLES}
    # Never wait for someone to type a password or accept a host key: fail instead.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    if access is not None:
        env["GIT_ALLOW_PROTOCOL"] = access.protocols
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        env.pop("SSH_ASKPASS", None)
    return env


def _options(
    access: RemoteAccess | None, credentials: Credentials | None = None, url: str = ""
) -> list[str]:
    options = ["-c", "core.fsmonitor=false", "-c", "advice.detachedHead=false"]
    for setting in access.config if access else ():
        options += ["-c", setting]
    if credentials is not None:
        # Those credentials and no others (the empty value drops any helper configured
        # before, the operator's own), for the address's own scheme, host and port only:
        # a redirect to another host (which the operator's clones follow) was answered
        # with them too.
        options += ["-c", "credential.helper=",
                    "-c", f"credential.{_origin(url)}.helper={_CREDENTIAL_HELPER}"]
    return options


def _origin(url: str) -> str:
    """An http(s) address's scheme, host and port (`https://host:8443`): what git matches
    a `credential.<url>.*` setting against."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2]}"


def _run_clone(
    url: str, target: Path, *, timeout: float, max_bytes: int, access: RemoteAccess | None,
    credentials: Credentials | None,
) -> None:
    command = [
        "git", *_options(access, credentials, url),
        "clone", "--quiet", "--depth", "1", "--single-branch", "--no-tags",
        "--no-recurse-submodules", "--", url, str(target),
    ]
    _run_bounded(
        command, url, doing="cloning", measured=target.parent, cwd=None, timeout=timeout,
        max_bytes=max_bytes, access=access, credentials=credentials,
    )


def _run_bounded(
    command: list[str], url: str, *, doing: str, measured: Path, cwd: Path | None,
    timeout: float, max_bytes: int, access: RemoteAccess | None,
    credentials: Credentials | None = None, timeout_name: str = "GIT_CLONE_TIMEOUT",
) -> None:
    """Run git's `command`, stopped past `timeout` seconds or once `measured` holds more
    than `max_bytes`; RepositoryError "{doing} URL failed|stopped: why"."""
    public = without_credentials(url)
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            env=_environment(access, credentials), cwd=cwd,
        )
        try:
            deadline = time.monotonic() + timeout
            problem = ""
            while process.poll() is None:
                if time.monotonic() > deadline:
                    problem = f"it took longer than {timeout:g} s ({timeout_name})"
                elif _size(measured) > max_bytes:
                    problem = f"it grew past {max_bytes:,} bytes (GIT_CLONE_MAX_BYTES)"
                if problem:
                    raise RepositoryError(f"{doing} {public} stopped: {problem}")
                time.sleep(0.2)
        finally:
            # Also when a task's time limit fires in the sleep: no git left running unbounded.
            if process.poll() is None:
                process.kill()
                process.wait()
        if process.returncode != 0:
            stderr.seek(0)
            said = _git_message(stderr.read(), url, credentials) or (
                f"git exited {process.returncode}"
            )
            raise RepositoryError(f"{doing} {public} failed: {said}{_hint(said)}")
    if _size(measured) > max_bytes:  # grew past it between two looks
        raise RepositoryError(
            f"{doing} {public} stopped: it grew past {max_bytes:,} bytes (GIT_CLONE_MAX_BYTES)"
        )


def _hint(said: str) -> str:
    """What git's reason means for whoever added the address."""
    lowered = said.lower()
    if "could not read username" in lowered or "authentication failed" in lowered or (
        "terminal prompts disabled" in lowered
    ):
        return (
            " (the repository needs credentials: it is private, or the address is wrong; "
            "nothing is asked for)"
        )
    if "not found" in lowered or "does not appear to be a git repository" in lowered:
        return " (no repository at that address)"
    if "redirect" in lowered or re.search(r"returned error: 30[1278]\b", lowered):
        return " (redirects are not followed: give the address it redirects to)"
    return ""


def origin_url(repo: Path) -> str:
    """The address a clone was made from (its `origin`, kept without credentials); ''
    when it has none."""
    try:
        found = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "config", "--get", "remote.origin.url"],
            cwd=repo, env=_environment(), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip() if found.returncode == 0 else ""


@dataclass(frozen=True)
class Fetched:
    """A clone brought to its remote's last commit: HEAD before and after."""

    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def fetch(
    repo: Path, *, timeout: float, max_bytes: int, access: RemoteAccess | None = None,
    timeout_name: str = "GIT_CLONE_TIMEOUT",
) -> Fetched:
    """Bring the clone at `repo` to the last commit of its remote's default branch, as
    `clone` made it (that commit only): its work tree then holds the files of that
    commit, and not those deleted upstream. The same bounds as a clone's (the whole
    clone within `max_bytes`); RepositoryError saying why, the clone then as it was.
    With the credentials the clone was made with, given to git as they were then."""
    url = _lower_scheme(origin_url(repo))
    if not url:
        raise RepositoryError(f"{repo} has no remote to fetch from")
    credentials = kept_credentials(repo)
    before = _rev_parse(repo, "HEAD", timeout=timeout)
    _run_bounded(
        ["git", *_options(access, credentials, url), "fetch", "--quiet", "--depth", "1",
         "--no-tags", "--no-recurse-submodules", "--", url, "HEAD"],
        url, doing="fetching", measured=repo, cwd=repo, timeout=timeout,
        max_bytes=max_bytes, access=access, credentials=credentials,
        timeout_name=timeout_name,
    )
    after = _rev_parse(repo, "FETCH_HEAD", timeout=timeout)
    if after != before:
        _git_in(repo, "reset", "--quiet", "--hard", after, timeout=timeout)
        if _size(repo) > max_bytes:
            _git_in(repo, "reset", "--quiet", "--hard", before, timeout=timeout)
            _drop_unreachable(repo, timeout=timeout)
            raise RepositoryError(
                f"fetching {url} stopped: its files grew past {max_bytes:,} bytes "
                "(GIT_CLONE_MAX_BYTES)"
            )
        # The earlier commit's objects go (its remote-tracking ref moved on, the reflogs
        # emptied): else every fetch adds to the clone until it can never be fetched
        # again within GIT_CLONE_MAX_BYTES.
        for ref in _remote_refs(repo, timeout=timeout):
            _git_in(repo, "update-ref", "--no-deref", ref, after, timeout=timeout)
        _drop_unreachable(repo, timeout=timeout)
    return Fetched(before, after)


def _remote_refs(repo: Path, *, timeout: float) -> list[str]:
    """The clone's remote-tracking refs (not the symbolic origin/HEAD)."""
    try:
        found = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "for-each-ref",
             "--format=%(refname) %(symref)", "refs/remotes"],
            cwd=repo, env=_environment(), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=timeout, check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RepositoryError(f"git for-each-ref in the clone failed: {exc}") from None
    refs = []
    for line in found.stdout.splitlines():
        name, _, symbolic = line.partition(" ")
        if name and not symbolic.strip():
            refs.append(name)
    return refs


def _drop_unreachable(repo: Path, *, timeout: float) -> None:
    _git_in(repo, "reflog", "expire", "--expire=now", "--all", timeout=timeout)
    _git_in(repo, "gc", "--quiet", "--prune=now", timeout=timeout)


def _rev_parse(repo: Path, name: str, *, timeout: float) -> str:
    try:
        found = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "rev-parse", "--verify", "--quiet",
             f"{name}^{{commit}}"],
            cwd=repo, env=_environment(), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RepositoryError(f"git rev-parse in {repo} failed: {exc}") from None
    if found.returncode != 0:
        raise RepositoryError(f"{repo} has no {name} commit")
    return found.stdout.strip()


def _git_message(raw: bytes, url: str, credentials: Credentials | None = None) -> str:
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
    given = (credentials.password, credentials.username) if credentials else ()
    for secret in (password, user, *given):
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
