"""Code repositories added by their git URL through the API, the admin and MCP, cloned on a
worker; what an outsider's address may reach; `stale` fetching a clone's remote. Real git
throughout: bare repositories in tmp dirs, served by `git http-backend` on loopback."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from knowledge.models import Document, IngestJob
from mcp_server import tools
from tests.git_http import git_server

pytestmark = pytest.mark.django_db


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def served(tmp_path: Path, settings) -> dict:
    """A work tree `billing` and its bare copy at tmp/served/billing.git (pushed to by
    the tests); clones go to tmp/clones."""
    settings.GIT_CLONE_DIR = tmp_path / "clones"
    work = tmp_path / "billing"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    write(work, "src/invoice.py", "def compute_tax_total(lines):\n    return sum(lines)\n")
    write(work, "src/legacy.py", "def old_rounding(x):\n    return round(x)\n")
    write(work, "README.md", "# Billing\n\nRun `billing serve` to start the ledger.\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "init")
    bare = tmp_path / "served" / "billing.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return {"work": work, "bare": bare, "root": bare.parent}


def push(served: dict) -> None:
    git(served["work"], "add", "-A")
    git(served["work"], "commit", "-q", "-m", "change")
    git(served["work"], "push", "-q", str(served["bare"]), "HEAD:main")


@pytest.fixture
def api(user, workspace) -> APIClient:
    """A member of the workspace (not staff), by token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def paths_of(workspace) -> dict[str, Document]:
    """The workspace's repository files by path (not the documents of failed clones)."""
    return {d.metadata["path"]: d for d in Document.objects.filter(workspace=workspace)
            if "path" in d.metadata}


def test_the_api_clones_a_git_url_on_a_worker_and_answers_202_at_once(
    api, workspace, served, settings, django_capture_on_commit_callbacks
):
    settings.URL_FETCH_ALLOW_PRIVATE = True  # the git server is on loopback
    with git_server(served["root"]) as base:
        url = f"{base}/billing.git"
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/documents", {"git_url": url}, format="json")
            assert response.status_code == 202, response.content
            body = response.json()
            # Answered before any clone: the job's one document stands for the repository.
            assert body["status"] == "running" and body["counts"]["PENDING"] == 1
            [standing] = body["documents"]
            assert standing["uri"] == f"git+{url}"
            assert not (Path(settings.GIT_CLONE_DIR)).exists()
            # One clone at a time per workspace: a second is a 409, nothing saved.
            again = api.post("/api/documents", {"git_url": url}, format="json")
            assert again.status_code == 409 and "being cloned" in again.json()["detail"]
            assert IngestJob.objects.count() == 1
        polled = api.get(response["Location"]).json()
    assert polled["status"] == "done", polled
    held = paths_of(workspace)
    assert sorted(held) == ["README.md", "src/invoice.py", "src/legacy.py"]
    assert {d.status for d in held.values()} == {Document.Status.INDEXED}
    assert not Document.objects.filter(uri__startswith="git+").exists()
    assert held["src/invoice.py"].metadata["git"]["remote"] == url
    assert polled["total"] == 3 and polled["counts"]["INDEXED"] == 3
    hits = api.get("/api/search", {"q": "compute_tax_total"}).json()["results"]
    assert hits and hits[0]["document_id"] == held["src/invoice.py"].pk


@pytest.mark.parametrize(("address", "said"), [
    ("file:///etc", "for staff allowed to add documents"),
    ("/srv/repos/billing", "not a repository's http(s) address"),
    ("ext::sh -c touch% /tmp/pwned", "remote helpers"),
    ("ssh://git@example.com/acme/billing.git", "not ssh://"),
    ("git@example.com:acme/billing.git", "not a repository's http(s) address"),
    ("git://example.com/acme/billing.git", "not git://"),
    ("http://127.0.0.1:9/acme/billing.git", "private or reserved address"),
    ("http://[::1]:9/acme/billing.git", "private or reserved address"),
    # The refusal names the address as written (an outside audit's garbled ones).
    ("http://[::ffff:127.0.0.1]/r", "Refusing to fetch http://[::ffff:127.0.0.1]/r: "),
    ("http://127.0.0.1:99999/r", "URL has an invalid port: http://127.0.0.1:99999/r"),
    ("http://169.254.169.254/latest.git", "private or reserved address"),
])
def test_the_api_refuses_a_git_url_reaching_local_paths_or_internal_hosts(
    api, workspace, address, said, tmp_path, settings
):
    settings.GIT_CLONE_DIR = tmp_path / "clones"
    response = api.post("/api/documents", {"git_url": address}, format="json")
    assert response.status_code == 400, response.content
    assert said in " ".join(response.json()["git_url"])
    # A `url` only git speaks, or ending in .git, is judged as a repository too.
    response = api.post("/api/documents", {"url": address}, format="json")
    assert response.status_code == 400, response.content
    assert not Document.objects.exists() and not IngestJob.objects.exists()
    assert not (tmp_path / "clones").exists() and not Path("/tmp/pwned").exists()


def test_a_failed_clone_fails_its_document_saying_why(
    api, workspace, served, settings, django_capture_on_commit_callbacks
):
    settings.URL_FETCH_ALLOW_PRIVATE = True
    with git_server(served["root"]) as base:
        for address, said in [
            (f"{base}/private/billing.git", "needs credentials"),
            (f"{base}/nothing-here.git", "no repository at that address"),
        ]:
            with django_capture_on_commit_callbacks(execute=True):
                response = api.post("/api/documents", {"git_url": address}, format="json")
            assert response.status_code == 202, response.content
            job = api.get(response["Location"]).json()
            assert job["status"] == "done" and job["counts"]["FAILED"] == 1
            [failed] = job["documents"]
            assert failed["uri"] == f"git+{address}" and said in failed["last_error"]
        settings.GIT_CLONE_MAX_BYTES = 2000
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(
                "/api/documents", {"git_url": f"{base}/billing.git"}, format="json"
            )
        [failed] = api.get(response["Location"]).json()["documents"]
        assert "GIT_CLONE_MAX_BYTES" in failed["last_error"]
        # Nothing of the failed clones is kept (the workspace's lock file aside).
        assert not any(p.is_file() and p.name != ".lock"
                       for p in Path(settings.GIT_CLONE_DIR).rglob("*"))
        # Re-indexing it (the bound lifted) clones it again, on the bulk queue.
        settings.GIT_CLONE_MAX_BYTES = 10**9
        with django_capture_on_commit_callbacks(execute=True):
            again = api.post("/api/documents/reindex", {"document_ids": [failed["id"]]},
                             format="json")
        assert again.status_code in (200, 202), again.content
    assert sorted(paths_of(workspace)) == ["README.md", "src/invoice.py", "src/legacy.py"]
    assert not Document.objects.filter(pk=failed["id"]).exists()
    assert Document.objects.filter(uri__startswith="git+").count() == 2  # the other two


def test_mcp_and_the_admin_add_a_repository_by_its_git_url(
    client, user, staff, workspace, served, settings, django_capture_on_commit_callbacks
):
    settings.URL_FETCH_ALLOW_PRIVATE = True
    with git_server(served["root"]) as base:
        url = f"{base}/billing.git"
        with pytest.raises(tools.Refused, match="for staff allowed"):
            tools.ingest(user, url=None, path=None, git_url=served["bare"].as_uri(),
                         folder_id=None, workspace=None)
        with django_capture_on_commit_callbacks(execute=True):
            job = tools.ingest(user, url=None, path=None, git_url=url, folder_id=None,
                               workspace=None)
        assert job["documents"][0]["uri"] == f"git+{url}"
        assert sorted(paths_of(workspace)) == ["README.md", "src/invoice.py", "src/legacy.py"]

        client.force_login(staff)
        refused = client.post(reverse("admin:knowledge_document_add_sources"),
                              {"workspace": workspace.pk, "git_url": "ext::sh -c id"})
        assert refused.status_code == 200
        assert "remote helpers" in " ".join(refused.context["form"].errors["git_url"])
        write(served["work"], "docs/setup.md", "# Setup\n\nInstall the ledger.\n")
        push(served)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("admin:knowledge_document_add_sources"),
                                   {"workspace": workspace.pk, "git_url": url})
    assert response.status_code == 302
    job = IngestJob.objects.latest("pk")
    assert response["Location"] == reverse("admin:knowledge_ingestjob_change", args=[job.pk])
    held = paths_of(workspace)
    assert sorted(held) == ["README.md", "docs/setup.md", "src/invoice.py", "src/legacy.py"]
    assert held["docs/setup.md"].status == Document.Status.INDEXED


def test_stale_fetches_a_cloned_repository_and_reindex_applies_its_changes(
    workspace, served, settings, capsys, user, django_capture_on_commit_callbacks
):
    call_command("ingest", served["bare"].as_uri(), workspace=workspace.slug, inline=True)
    before = paths_of(workspace)
    assert sorted(before) == ["README.md", "src/invoice.py", "src/legacy.py"]
    capsys.readouterr()

    call_command("stale", workspace=workspace.slug)
    assert "0 stale" in capsys.readouterr().out  # nothing changed upstream

    write(served["work"], "src/invoice.py", "def compute_tax_total(lines):\n    return 42\n")
    (served["work"] / "src" / "legacy.py").unlink()
    write(served["work"], "src/refund.py", "def issue_refund(order):\n    return order\n")
    push(served)
    call_command("stale", workspace=workspace.slug)
    out = capsys.readouterr().out
    invoice, legacy = before["src/invoice.py"], before["src/legacy.py"]
    assert f"STALE       {invoice.uri}" in out
    assert f"DELETED     {legacy.uri}" in out
    assert "NEW" in out and "src/refund.py" in out
    assert "FETCHED" in out and "1 deleted upstream" in out
    legacy.refresh_from_db()
    assert legacy.status == Document.Status.STALE and "upstream" in legacy.last_error

    with django_capture_on_commit_callbacks(execute=True):
        call_command("stale", workspace=workspace.slug, reindex=True)
    held = paths_of(workspace)
    assert sorted(held) == ["README.md", "src/invoice.py", "src/refund.py"]
    assert "return 42" in held["src/invoice.py"].text
    head = git(served["work"], "rev-parse", "HEAD")
    assert held["src/invoice.py"].metadata["git"]["commit"] == head
    assert held["src/refund.py"].status == Document.Status.INDEXED

    # MCP's check (an outsider's) fetches by the outsider's rules: loopback refused…
    write(served["work"], "README.md", "# Billing\n\nRun `billing serve --port 80`.\n")
    push(served)
    checked = tools.stale(user, check=True, workspace=None)
    assert "INGEST_SERVER_ROOTS" in checked["not_fetched"][0]["error"]
    # …and names no folder of the server's to a member who is not staff (audit3 L7).
    error = checked["not_fetched"][0]["error"]
    assert str(served["root"].parent) not in error and "billing.git is outside" in error, error
    assert checked["stale"] == []


def test_mcp_stale_check_fetches_a_repository_added_by_its_http_url(
    user, workspace, served, settings, django_capture_on_commit_callbacks
):
    settings.URL_FETCH_ALLOW_PRIVATE = True
    with git_server(served["root"]) as base:
        with django_capture_on_commit_callbacks(execute=True):
            tools.ingest(user, url=None, path=None, git_url=f"{base}/billing.git",
                         folder_id=None, workspace=None)
        before = paths_of(workspace)
        (served["work"] / "src" / "legacy.py").unlink()
        write(served["work"], "README.md", "# Billing\n\nRun `billing serve --port 80`.\n")
        push(served)
        checked = tools.stale(user, check=True, workspace=None)
    assert [d["id"] for d in checked["stale"]] == [before["README.md"].pk]
    assert [d["id"] for d in checked["deleted"]] == [before["src/legacy.py"].pk]
    assert "not_fetched" not in checked
    settings.URL_FETCH_ALLOW_PRIVATE = False  # the host policy holds for the fetch too
    checked = tools.stale(user, check=True, workspace=None)
    assert "private or reserved address" in checked["not_fetched"][0]["error"]


@pytest.mark.django_db(transaction=True)
def test_ingest_clones_outside_any_database_transaction(workspace, served, settings):
    """A clone takes minutes: no connection may sit idle in a transaction meanwhile."""
    seen: list[int] = []

    def idle_in_transaction(path: str) -> None:
        with connections["default"].cursor() as cursor:  # this server thread's own
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
            )
            seen.append(cursor.fetchone()[0])
        connections["default"].close()

    with git_server(served["root"], on_request=idle_in_transaction) as base:
        call_command("ingest", f"{base}/billing.git", workspace=workspace.slug, inline=True)
    assert seen and set(seen) == {0}, seen
    assert sorted(paths_of(workspace)) == ["README.md", "src/invoice.py", "src/legacy.py"]


def test_check_git_url_is_the_one_policy(user, staff, tmp_path, settings):
    from indexing import git_sources

    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    repo = tmp_path / "repo"
    repo.mkdir()
    # Staff may clone a repository under INGEST_SERVER_ROOTS by file://; nobody else, and
    # nothing outside them.
    assert git_sources.check_git_url(url=repo.as_uri(), user=staff).protocols == "file"
    with pytest.raises(git_sources.sources.SourceRefused, match="INGEST_SERVER_ROOTS"):
        git_sources.check_git_url(url="file:///etc", user=staff)
    access = git_sources.check_git_url(url="https://93.184.216.34/acme/billing.git", user=user)
    assert access.protocols == "https" and "http.followRedirects=false" in access.config


def test_an_outsiders_clone_goes_to_the_checked_address_only(tmp_path, served):
    """git connects to the addresses the policy checked (not to what its own DNS lookup
    would say) and follows no redirect."""
    from indexing.loaders.git_clone import RepositoryError, check_remote, clone

    with git_server(served["root"]) as base:
        port = base.rsplit(":", 1)[1]
        # A name no DNS knows, checked as resolving to the loopback server: git reaches it.
        access = check_remote(
            f"http://git.verity.invalid:{port}/billing.git", allow_private=True,
            resolve=lambda host, port: ["127.0.0.1"],
        )
        cloned = clone(f"http://git.verity.invalid:{port}/billing.git", tmp_path / "a",
                       timeout=30, max_bytes=10**8, access=access)
        assert (cloned / "src" / "invoice.py").is_file()
        moved = f"{base}/moved/billing.git"
        access = check_remote(moved, allow_private=True)
        with pytest.raises(RepositoryError, match="redirects are not followed"):
            clone(moved, tmp_path / "b", timeout=30, max_bytes=10**8, access=access)
    with pytest.raises(RepositoryError, match="private or reserved"):
        check_remote("http://git.verity.invalid/billing.git", allow_private=False,
                     resolve=lambda host, port: ["93.184.216.34", "10.0.0.7"])


# --- The review's holes (proxies, hosts, whose clone, cancel, failures, disk) ---------


def test_an_outsiders_clone_ignores_proxies_in_the_environment(tmp_path, served, monkeypatch):
    """A proxy would resolve the name again (past the pin) and reach internal hosts."""
    from http.server import BaseHTTPRequestHandler

    from indexing.loaders.git_clone import check_remote, clone
    from tests.conftest import serving

    asked: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            asked.append(self.path)
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET  # noqa: N815
        do_CONNECT = do_GET  # noqa: N815

        def log_message(self, *args) -> None:
            pass

    with serving(Proxy) as proxy, git_server(served["root"]) as base:
        for name in ("http_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy)
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'http.proxy'='{proxy}'")
        port = base.rsplit(":", 1)[1]
        url = f"http://git.verity.invalid:{port}/billing.git"
        access = check_remote(url, allow_private=True, resolve=lambda host, port: ["127.0.0.1"])
        cloned = clone(url, tmp_path / "a", timeout=30, max_bytes=10**8, access=access)
    assert not [p for p in asked if "verity" in p or "billing" in p], asked
    assert (cloned / "src" / "invoice.py").is_file()


@pytest.mark.parametrize("address", [
    "http://git%2everity.invalid:9/billing.git",
    "http://git.verity.invalid%00:9/billing.git",
    "http://git\\verity.invalid/billing.git",
    "http://gït.verity.invalid/billing.git",
])
def test_a_host_curl_would_read_otherwise_than_the_policy_is_refused(address):
    """The pin is made for the host as the policy reads it: `repo%2einvalid` is pinned,
    and curl, decoding it, resolves `repo.invalid` by itself."""
    from indexing.loaders.git_clone import RemoteRefused, check_remote

    with pytest.raises(RemoteRefused, match="its host may hold only"):
        check_remote(address, allow_private=True, resolve=lambda host, port: ["93.184.216.34"])


def test_operator_stale_fetches_an_outsiders_clone_by_the_outsiders_rules(
    user, workspace, served, settings, capsys, django_capture_on_commit_callbacks
):
    """The remote of a clone a member added may later redirect (to an internal host, or
    a private repository the server's credential helper opens): `manage.py stale`
    follows no redirect of it."""
    from indexing import git_sources

    settings.URL_FETCH_ALLOW_PRIVATE = True
    seen: list[str] = []
    with git_server(served["root"], on_request=seen.append) as base:
        with django_capture_on_commit_callbacks(execute=True):
            git_sources.register_git_url(workspace=workspace, url=f"{base}/billing.git",
                                         user=user)
        root = Path(paths_of(workspace)["README.md"].metadata["repo_root"])
        assert root.is_relative_to(git_sources.workspace_clone_dir(workspace.pk))
        git(root, "remote", "set-url", "origin", f"{base}/moved/billing.git")
        write(served["work"], "README.md", "changed\n")
        push(served)
        seen.clear()
        call_command("stale", workspace=workspace.slug)
    out = capsys.readouterr().out
    assert "NOT FETCHED" in out and "redirects are not followed" in out, out
    assert not any(path.startswith("/billing.git") for path in seen), seen


def test_each_workspace_clones_a_repository_into_its_own_folder(
    user, workspace, served, settings, django_capture_on_commit_callbacks
):
    from indexing import git_sources
    from knowledge.models import Workspace

    settings.URL_FETCH_ALLOW_PRIVATE = True
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    with git_server(served["root"]) as base:
        for held in (workspace, other):
            with django_capture_on_commit_callbacks(execute=True):
                git_sources.register_git_url(workspace=held, url=f"{base}/billing.git")
    mine = Path(paths_of(workspace)["README.md"].metadata["repo_root"])
    theirs = Path(paths_of(other)["README.md"].metadata["repo_root"])
    assert mine != theirs
    assert mine.is_relative_to(git_sources.workspace_clone_dir(workspace.pk))
    assert theirs.is_relative_to(git_sources.workspace_clone_dir(other.pk))


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_job_while_its_repository_clones_registers_nothing(
    user, workspace, served, settings
):
    from indexing import git_sources, sources

    settings.URL_FETCH_ALLOW_PRIVATE = True
    cancelled: list[int] = []

    def cancel_once(path: str) -> None:
        if not cancelled:
            cancelled.append(sources.cancel_job(job=IngestJob.objects.latest("pk")).indexing)
            connections["default"].close()  # this server thread's own

    with git_server(served["root"], on_request=cancel_once) as base:
        job, placeholder = git_sources.register_git_url(
            workspace=workspace, url=f"{base}/billing.git", user=user
        )  # committed: cloned at once (on_commit)
    assert cancelled == [1]
    job.refresh_from_db()
    placeholder.refresh_from_db()
    assert job.cancelled_at is not None
    assert placeholder.status == Document.Status.FAILED
    assert "while it was cloned" in placeholder.last_error
    assert paths_of(workspace) == {}


def test_an_unexpected_error_fails_the_clone_and_a_lost_clone_blocks_nothing(
    api, user, workspace, served, settings, tmp_path, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    settings.URL_FETCH_ALLOW_PRIVATE = True
    settings.GIT_CLONE_DIR = tmp_path / "not-a-folder"
    settings.GIT_CLONE_DIR.write_text("")  # every mkdir below it fails: an OSError
    with git_server(served["root"]) as base:
        url = f"{base}/billing.git"
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/documents", {"git_url": url}, format="json")
        assert response.status_code == 202, response.content
        [failed] = api.get(response["Location"]).json()["documents"]
        assert failed["status"] == "FAILED" and "unexpectedly" in failed["last_error"]
        # Members are not shown the server's paths.
        assert str(tmp_path) not in failed["last_error"], failed["last_error"]

        # A placeholder left INDEXING by a worker gone long ago blocks no later clone.
        settings.GIT_CLONE_DIR = tmp_path / "clones"
        Document.objects.filter(pk=failed["id"]).update(
            status=Document.Status.INDEXING, updated_at=timezone.now() - timedelta(days=1)
        )
        with django_capture_on_commit_callbacks(execute=True):
            again = api.post("/api/documents", {"git_url": url}, format="json")
        assert again.status_code == 202, again.content
    assert sorted(paths_of(workspace)) == ["README.md", "src/invoice.py", "src/legacy.py"]


def test_a_second_clone_for_the_workspace_at_once_waits_for_the_first(
    user, workspace, served, settings
):
    """A redelivered clone task and the start-up requeue: one clones, the other leaves
    the document to it."""
    import fcntl

    from indexing import git_sources
    from indexing.freshness import fetch_clones

    settings.URL_FETCH_ALLOW_PRIVATE = True
    job, placeholder = git_sources.register_git_url(
        workspace=workspace, url="http://127.0.0.1:9/billing.git", user=user
    )
    folder = git_sources.workspace_clone_dir(workspace.pk)
    folder.mkdir(parents=True)
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's clone
        status = git_sources.clone_for_document(document_id=placeholder.pk)
        # Nor is a clone of the workspace fetched meanwhile (`stale`, MCP's check).
        elsewhere = folder / "0123456789abcdef" / "billing"
        elsewhere.mkdir(parents=True)
        _fetched, failed = fetch_clones(roots=[str(elsewhere)])
    placeholder.refresh_from_db()
    assert status == placeholder.status == Document.Status.PENDING
    assert "being cloned or fetched now" in failed[str(elsewhere)]


def test_clones_no_document_uses_are_deleted_and_a_workspace_holds_a_bounded_number(
    api, user, workspace, served, settings, django_capture_on_commit_callbacks
):
    from indexing import git_sources
    from indexing.deletion import purge_workspace
    from knowledge.services import workspace_hide

    settings.URL_FETCH_ALLOW_PRIVATE = True
    settings.WORKSPACE_MAX_DOCUMENTS = 2
    clones = git_sources.workspace_clone_dir(workspace.pk)

    def kept() -> list[Path]:
        return [p for p in clones.iterdir() if p.is_dir()] if clones.is_dir() else []

    with git_server(served["root"]) as base:
        # One address however it is spelled; a clone refused for the quota is not kept.
        for address in (f"{base}/billing.git", f"{base}/billing.git/",
                        f"{base.upper()}/billing.git"):
            with django_capture_on_commit_callbacks(execute=True):
                response = api.post("/api/documents", {"git_url": address}, format="json")
            [failed] = api.get(response["Location"]).json()["documents"]
            assert "limit" in failed["last_error"], failed
            assert kept() == []
        settings.WORKSPACE_MAX_DOCUMENTS = 100
        settings.GIT_CLONES_PER_WORKSPACE = 1
        with django_capture_on_commit_callbacks(execute=True):
            api.post("/api/documents", {"git_url": f"{base}/billing.git"}, format="json")
        assert len(kept()) == 1 and len(paths_of(workspace)) == 3
        git(served["root"], "clone", "-q", "--bare", str(served["work"]), "other.git")
        refused = api.post("/api/documents", {"git_url": f"{base}/other.git"}, format="json")
        assert refused.status_code == 400 and "GIT_CLONES_PER_WORKSPACE" in str(refused.json())
        # Once no document uses a clone, it goes, and another may be added.
        Document.objects.filter(workspace=workspace).delete()
        with django_capture_on_commit_callbacks(execute=True):
            added = api.post("/api/documents", {"git_url": f"{base}/other.git"}, format="json")
        assert added.status_code == 202, added.content
    assert [p.name for p in kept()] and len(kept()) == 1
    workspace_hide(workspace=workspace)
    purge_workspace(workspace_id=workspace.pk)
    assert not clones.exists()


def test_a_fetch_keeps_no_earlier_commit_in_the_clone(tmp_path, served):
    from indexing.loaders.git_clone import clone, fetch

    root = clone(served["bare"].as_uri(), tmp_path / "c", timeout=30, max_bytes=10**8)
    first = git(root, "rev-parse", "HEAD")
    write(served["work"], "README.md", "# Billing\n\nchanged\n")
    push(served)
    fetched = fetch(root, timeout=30, max_bytes=10**8)
    assert fetched.changed and fetched.before == first
    gone = subprocess.run(["git", "cat-file", "-e", f"{first}^{{commit}}"], cwd=root,
                          capture_output=True)
    assert gone.returncode != 0  # its objects went: fetches do not grow the clone


def test_mcp_stale_check_fetches_within_a_short_bound(
    user, workspace, served, settings, django_capture_on_commit_callbacks
):
    import time

    settings.URL_FETCH_ALLOW_PRIVATE = True
    slow = {"on": False}

    def maybe_slow(path: str) -> None:
        if slow["on"]:
            time.sleep(3)

    with git_server(served["root"], on_request=maybe_slow) as base:
        with django_capture_on_commit_callbacks(execute=True):
            tools.ingest(user, url=None, path=None, git_url=f"{base}/billing.git",
                         folder_id=None, workspace=None)
        settings.GIT_FETCH_CHECK_TIMEOUT = 1
        slow["on"] = True
        started = time.monotonic()
        checked = tools.stale(user, check=True, workspace=None)
        took = time.monotonic() - started
    assert "longer than 1 s (GIT_FETCH_CHECK_TIMEOUT)" in checked["not_fetched"][0]["error"]
    assert took < 3


def test_requeue_deletes_clones_a_killed_worker_left_half_made(workspace, settings, tmp_path):
    import os

    from indexing import git_sources

    settings.GIT_CLONE_DIR = tmp_path / "clones"
    operators = tmp_path / "clones" / "0123456789abcdef"
    theirs = git_sources.workspace_clone_dir(workspace.pk) / "fedcba9876543210"
    left = [operators / ".clone-old", theirs / ".clone-old"]
    for folder in left:
        (folder / "billing").mkdir(parents=True)
        os.utime(folder, (0, 0))  # long before any clone may still run
    recent = operators / ".clone-now"
    recent.mkdir()
    call_command("requeue", minutes=5)
    assert not any(folder.exists() for folder in left)
    assert recent.is_dir()  # a clone running now


@pytest.fixture
def git_commands(tmp_path: Path, monkeypatch) -> Path:
    """A file each `git` command run (by us, or by the test) appends its arguments to:
    what `ps` would show of it."""
    real = shutil.which("git")
    log = tmp_path / "git-commands.log"
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    return log


def test_a_private_repository_is_fetched_with_the_credentials_it_was_cloned_with(
    user, workspace, served, settings, capsys, caplog, git_commands,
    django_capture_on_commit_callbacks,
):
    """The credentials a private repository's address carried were used for its first
    clone only: `stale` and MCP's check fetched it without them (401), and it could never
    be refreshed. Every later git command uses them, given as the clone's were; none
    holds them in its arguments, the clone's .git/config, a message or a log."""
    from indexing import git_sources

    secret = "s3cret-t0ken"
    with git_server(served["root"], credentials=("ci", secret)) as base:
        private = base.replace("http://", f"http://ci:{secret}@") + "/billing.git"
        with pytest.raises(Exception, match="needs credentials"):
            call_command("ingest", f"{base}/billing.git", workspace=workspace.slug, inline=True)

        # The operator's clone, then `manage.py stale`.
        call_command("ingest", private, workspace=workspace.slug, inline=True)
        root = Path(paths_of(workspace)["README.md"].metadata["repo_root"])
        write(served["work"], "src/invoice.py", "def compute_tax_total(lines):\n    return 7\n")
        push(served)
        capsys.readouterr()
        call_command("stale", workspace=workspace.slug)
        out = capsys.readouterr().out
        assert "NOT FETCHED" not in out and f"FETCHED     {root}" in out, out
        assert "STALE" in out and "src/invoice.py" in out

        # A member's clone (the API's, MCP's), then MCP's check.
        settings.URL_FETCH_ALLOW_PRIVATE = True
        with django_capture_on_commit_callbacks(execute=True):
            git_sources.register_git_url(workspace=workspace, url=private, user=user)
        clones = [d for d in Document.objects.filter(workspace=workspace)
                  if git_sources.is_outsiders_clone(d.metadata.get("repo_root", "/"))]
        assert clones and {d.status for d in clones} == {Document.Status.INDEXED}
        member_root = Path(clones[0].metadata["repo_root"])
        write(served["work"], "README.md", "# Billing\n\nRun `billing serve --port 80`.\n")
        push(served)
        checked = tools.stale(user, check=True, workspace=None)
        assert "not_fetched" not in checked, checked["not_fetched"]
        assert {d["id"] for d in checked["stale"]} >= {
            d.pk for d in clones if d.metadata["path"] == "README.md"
        }
        # Its address added again without them: cloned with the ones kept.
        with django_capture_on_commit_callbacks(execute=True):
            _job, standing = git_sources.register_git_url(
                workspace=workspace, url=f"{base}/billing.git", user=user
            )
        assert not Document.objects.filter(pk=standing.pk).exists()  # its files took its place

    for clone in (root, member_root):
        assert git(clone, "log", "-1", "--format=%s") == "change"
        assert secret not in (clone / ".git" / "config").read_text()
        kept = clone.parent / f"{clone.name}.credentials"
        assert secret in kept.read_text() and kept.stat().st_mode & 0o777 == 0o600
        assert not [p for p in clone.rglob("*") if p.is_file() and secret in p.read_bytes().decode(
            "latin-1")]
    commands = git_commands.read_text()
    assert "fetch" in commands and "clone" in commands
    assert secret not in commands
    assert secret not in caplog.text
    assert not Document.objects.filter(last_error__contains=secret).exists()


def test_kept_credentials_are_given_to_their_own_host_only(workspace, served):
    """Audit 7 F1: the credential helper answered whatever host git asked about, so an
    address redirecting to another host (the operator's clones follow redirects) had the
    private repository's user name and password sent there."""
    from http.server import BaseHTTPRequestHandler

    from tests.conftest import serving

    asked: list[str | None] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            asked.append(self.headers.get("Authorization"))
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="elsewhere"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    with serving(Elsewhere) as elsewhere:
        other_host = elsewhere.replace("127.0.0.1", "localhost")

        class Redirect(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                self.send_response(301)
                self.send_header("Location", other_host + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        with serving(Redirect) as redirecting:
            private = redirecting.replace("http://", "http://ci:s3cret-t0ken@") + "/billing.git"
            with pytest.raises(Exception, match="failed"):
                call_command("ingest", private, workspace=workspace.slug, inline=True)
    assert asked, "git did not follow the redirect"
    assert asked == [None] * len(asked), asked
