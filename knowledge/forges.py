"""Links to a repository's file on its forge (GitHub, GitLab, Bitbucket, Gitea), at the
commit it was indexed from, so a citation opens the very lines it cites.

A remote URL may carry credentials (`https://user:token@host/…`): only the host and the
repository's path are ever kept from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

GITHUB, GITLAB, BITBUCKET, GITEA = "github", "gitlab", "bitbucket", "gitea"
FORGES = (GITHUB, GITLAB, BITBUCKET, GITEA)

# Public forges by host; a self-hosted one is known by its host's first label
# (`gitlab.example.com`, `gitea.corp.example`) or named in GIT_FORGES.
KNOWN_HOSTS: dict[str, str] = {
    "github.com": GITHUB,
    "gitlab.com": GITLAB,
    "bitbucket.org": BITBUCKET,
    "codeberg.org": GITEA,
    "gitea.com": GITEA,
}
_LABELS = {"github": GITHUB, "gitlab": GITLAB, "bitbucket": BITBUCKET, "gitea": GITEA,
           "forgejo": GITEA}

# scp-like syntax: `git@github.com:owner/repo.git` (no scheme, a colon before the path).
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!/).+)$")
_WEB_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git"})


def without_credentials(remote: str) -> str:
    """A remote URL as it may be stored and shown: an http(s) one without its user name
    and password (`https://ci:token@host/r.git` → `https://host/r.git`: a token is
    often passed as the user name), an ssh one without a password (its user, `git@`,
    is an account name, kept); a local path as it is."""
    remote = remote.strip()
    if "://" in remote:
        try:
            parts = urlsplit(remote)
        except ValueError:
            return ""
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address: "http://::1/r" would be no URL
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:
            # Out of range or no number: kept as written, for the refusal that names it.
            written = parts.netloc.rpartition("@")[2]
            port = written.rpartition("]")[2].partition(":")[2] if written.startswith("[") \
                else written.partition(":")[2]
        netloc = f"{host}:{port}" if port else host
        if parts.username and parts.scheme.lower() not in ("http", "https", "ftp", "ftps"):
            netloc = f"{parts.username}@{netloc}"
        return parts._replace(netloc=netloc, query="", fragment="").geturl()
    return remote


def repository_web_url(remote: str, *, forges: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(forge, the repository's web address) for a remote URL, or ('', '') when its host
    is no known forge: `git@github.com:acme/billing.git` → ('github',
    'https://github.com/acme/billing'). `forges`: more hosts, {host: forge}."""
    remote = remote.strip()
    if "://" in remote:
        try:
            parts = urlsplit(remote)
        except ValueError:
            return "", ""
        if parts.scheme.lower() not in _WEB_SCHEMES:
            return "", ""
        host, path = (parts.hostname or ""), parts.path
        # A web address keeps its port; an ssh or git port is no web server's.
        if parts.scheme.lower() in ("http", "https"):
            try:
                port = parts.port
            except ValueError:
                return "", ""
            scheme = parts.scheme.lower()
            host = f"{host}:{port}" if port else host
        else:
            scheme = "https"
    elif match := _SCP.match(remote):
        scheme, host, path = "https", match["host"].lower(), match["path"]
    else:
        return "", ""
    forge = forge_of(host.lower(), forges=forges)
    path = path.strip("/").removesuffix(".git").strip("/")
    if not forge or path.count("/") < 1 or any(p in ("", ".", "..") for p in path.split("/")):
        return "", ""
    return forge, f"{scheme}://{host.lower()}/{path}"


def forge_of(host: str, *, forges: Mapping[str, str] | None = None) -> str:
    """Which forge serves `host` ('' when none is known)."""
    name = host.split(":")[0]
    if forges and (forge := forges.get(name) or forges.get(host)):
        return forge if forge in FORGES else ""
    if name in KNOWN_HOSTS:
        return KNOWN_HOSTS[name]
    return _LABELS.get(name.split(".")[0], "")


def permalink(
    *, forge: str, web_url: str, commit: str, path: str,
    line_start: int | None = None, line_end: int | None = None,
) -> str:
    """The file at `commit` on its forge, its lines marked as each forge marks them."""
    if not (forge in FORGES and web_url and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit)):
        return ""
    quoted = quote(path, safe="/")
    start = line_start if isinstance(line_start, int) and line_start > 0 else None
    end = line_end if isinstance(line_end, int) and start and line_end > start else None
    if forge == GITLAB:
        url, anchor = f"{web_url}/-/blob/{commit}/{quoted}", f"L{start}-{end}"
    elif forge == BITBUCKET:
        url, anchor = f"{web_url}/src/{commit}/{quoted}", f"lines-{start}:{end}"
    elif forge == GITEA:
        url, anchor = f"{web_url}/src/commit/{commit}/{quoted}", f"L{start}-L{end}"
    else:
        url, anchor = f"{web_url}/blob/{commit}/{quoted}", f"L{start}-L{end}"
    if end is None:  # one line: no range
        anchor = anchor.partition(":" if forge == BITBUCKET else "-")[0]
    return f"{url}#{anchor}" if start else url


def citation_permalink(
    metadata: Mapping[str, Any], locator: Mapping[str, Any], *,
    forges: Mapping[str, str] | None = None,
) -> str:
    """The permalink of a repository document's passage, or '' when it has none: the
    document is not from a forge's repository, or the bytes indexed are not those its
    commit holds (an edit not committed, an untracked file): the link would show other
    lines. `forges`: more hosts, {host: forge} (GIT_FORGES)."""
    git = metadata.get("git")
    if not isinstance(git, Mapping) or not git.get("blob") or git.get("blob") != metadata.get(
        "git_blob"
    ):
        return ""
    forge, web_url = repository_web_url(str(git.get("remote") or ""), forges=forges)
    path = locator.get("path") or metadata.get("path")
    if not forge or not isinstance(path, str) or not path:
        return ""
    member = locator.get("member")
    # A notebook cell's lines count from the cell, not the file: the file, unmarked.
    lines = {} if "cell" in locator else member if isinstance(member, Mapping) else locator
    return permalink(
        forge=forge, web_url=web_url, commit=str(git.get("commit") or ""), path=path,
        line_start=lines.get("line_start"), line_end=lines.get("line_end"),
    )
