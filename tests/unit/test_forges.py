"""Repository remotes read as forge addresses, and the permalinks made from them."""

from __future__ import annotations

import pytest

from knowledge.forges import (
    citation_permalink,
    permalink,
    repository_web_url,
    without_credentials,
)

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(("remote", "expected"), [
    ("git@github.com:acme/billing.git", ("github", "https://github.com/acme/billing")),
    ("https://github.com/acme/billing", ("github", "https://github.com/acme/billing")),
    ("https://ci:s3cret@gitlab.com/acme/platform/billing.git",
     ("gitlab", "https://gitlab.com/acme/platform/billing")),
    ("ssh://git@gitlab.example.com:2222/acme/billing.git",
     ("gitlab", "https://gitlab.example.com/acme/billing")),
    ("git@bitbucket.org:acme/billing.git", ("bitbucket", "https://bitbucket.org/acme/billing")),
    ("https://codeberg.org/acme/billing.git", ("gitea", "https://codeberg.org/acme/billing")),
    ("http://gitea.lan:3000/acme/billing", ("gitea", "http://gitea.lan:3000/acme/billing")),
    ("https://git.example.com/acme/billing.git", ("", "")),  # no known forge
    ("file:///srv/git/billing.git", ("", "")),
    ("/srv/git/billing.git", ("", "")),
    ("git@github.com:billing.git", ("", "")),  # no owner
])
def test_remotes_are_read_as_their_forges_web_address(remote, expected):
    assert repository_web_url(remote) == expected


def test_a_self_hosted_forge_is_named_by_its_host():
    assert repository_web_url(
        "git@git.example.com:acme/billing.git", forges={"git.example.com": "gitlab"}
    ) == ("gitlab", "https://git.example.com/acme/billing")


def test_credentials_never_stay_in_a_remote():
    assert without_credentials("https://ci:s3cret@gitlab.com/a/b.git") == "https://gitlab.com/a/b.git"
    assert without_credentials("https://tok@host:8443/a/b.git") == "https://host:8443/a/b.git"
    assert without_credentials("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert without_credentials("ssh://git:pw@host:22/a/b.git") == "ssh://git@host:22/a/b.git"
    # An IPv6 host keeps its brackets; a port out of range is kept for the refusal naming it.
    assert without_credentials("http://u:p@[::1]:8080/r") == "http://[::1]:8080/r"
    assert without_credentials("http://u:p@host:99999/r") == "http://host:99999/r"
    assert "s3cret" not in repository_web_url("https://ci:s3cret@github.com/a/b")[1]


@pytest.mark.parametrize(("forge", "url", "expected"), [
    ("github", "https://github.com/a/b", f"https://github.com/a/b/blob/{SHA}/src/my%20file.py#L3-L9"),
    ("gitlab", "https://gitlab.com/a/b", f"https://gitlab.com/a/b/-/blob/{SHA}/src/my%20file.py#L3-9"),
    ("bitbucket", "https://bitbucket.org/a/b",
     f"https://bitbucket.org/a/b/src/{SHA}/src/my%20file.py#lines-3:9"),
    ("gitea", "https://codeberg.org/a/b",
     f"https://codeberg.org/a/b/src/commit/{SHA}/src/my%20file.py#L3-L9"),
])
def test_each_forge_marks_the_lines_its_own_way(forge, url, expected):
    assert permalink(
        forge=forge, web_url=url, commit=SHA, path="src/my file.py", line_start=3, line_end=9
    ) == expected


def test_a_passage_links_only_when_the_bytes_indexed_are_the_commits():
    git = {"commit": SHA, "branch": "main", "remote": "git@github.com:a/b.git", "blob": "f" * 40}
    metadata = {"path": "x.py", "git": git, "git_blob": "f" * 40}
    locator = {"path": "x.py", "line_start": 5, "line_end": 5}
    assert citation_permalink(metadata, locator) == f"https://github.com/a/b/blob/{SHA}/x.py#L5"
    member = {**locator, "line_end": 40, "member": {"name": "C.m", "line_start": 8, "line_end": 12}}
    assert citation_permalink(metadata, member).endswith("#L8-L12")
    assert citation_permalink({**metadata, "git_blob": "e" * 40}, locator) == ""  # edited
    assert citation_permalink({**metadata, "git": {**git, "blob": ""}}, locator) == ""  # untracked
    assert citation_permalink({"path": "x.py"}, locator) == ""


def test_a_notebook_cells_passage_links_to_the_notebook_without_lines():
    git = {"commit": SHA, "remote": "git@github.com:a/b.git", "blob": "f" * 40}
    metadata = {"git": git, "git_blob": "f" * 40}
    cell = {"path": "nb.ipynb", "cell": 3, "line_start": 1, "line_end": 4}
    assert citation_permalink(metadata, cell) == f"https://github.com/a/b/blob/{SHA}/nb.ipynb"
