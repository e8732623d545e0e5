"""Production defaults (issue 9, item 9): DEBUG off unless asked, no constant SECRET_KEY,
`check --deploy` clean apart from the documented HTTPS items.

The served process is `manage.py serve` started as `make run` does, with neither DEBUG
nor SECRET_KEY in its environment (tests/security/conftest.py).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

OLD_CONSTANT = "dev-only-insecure-key-change-me"


def get(served, path: str, host: str = "127.0.0.1") -> tuple[int, dict[str, str], str]:
    raw = served.request(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body.decode()


@pytest.mark.slow
def test_served_404_lists_no_url_patterns(served):
    status, _, body = get(served, "/no-such-page")
    assert status == 404
    for leak in ("URLconf", "urlpatterns", "api/threads", "admin/", "DEBUG = True"):
        assert leak not in body, leak


@pytest.mark.slow
def test_served_errors_show_no_traceback_or_settings(served):
    # A request for a host not in ALLOWED_HOSTS raises DisallowedHost inside Django;
    # with DEBUG on, its page shows the traceback, local variables and settings.
    status, _, body = get(served, "/", host="attacker.example")
    assert status == 400
    for leak in ("Traceback", "DisallowedHost", "ALLOWED_HOSTS", "SECRET_KEY", "Local vars"):
        assert leak not in body, leak


@pytest.mark.slow
def test_served_static_files_load_for_the_chat_and_the_admin(served):
    # The sign-in page uses the chat's stylesheet; the chat page (signed in) also its script.
    status, _, login = get(served, "/accounts/login/")
    assert status == 200
    admin_status, _, admin_login = get(served, "/admin/login/")
    assert admin_status == 200
    assets = set(re.findall(r'(?:href|src)="(/static/[^"]+)"', login + admin_login))
    assets |= {"/static/chat/chat.js", "/static/chat/chat.css", "/static/admin/css/base.css"}
    assets |= {"/static/chat/vendor/markdown-it.min.js", "/static/chat/vendor/purify.min.js"}
    assert any(a.startswith("/static/admin/") for a in assets), "the admin page links its CSS"
    for asset in sorted(assets):
        status, headers, body = get(served, asset)
        assert status == 200, asset
        assert body, asset
        expected = "javascript" if asset.endswith(".js") else "css"
        assert expected in headers["content-type"], (asset, headers["content-type"])


def settings_of(home: Path, *names: str, **env: str) -> list[str]:
    """Read settings the way every process does: config.settings under this environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "HTTPS")}
    code = (
        "from django.conf import settings; "
        f"print('\\n'.join(str(getattr(settings, n)) for n in {names!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "VERITY_HOME": str(home),
             # Never connected to here; spares starting the embedded PostgreSQL.
             "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def test_debug_is_off_unless_asked_for(tmp_path):
    assert settings_of(tmp_path, "DEBUG") == ["False"]
    assert settings_of(tmp_path, "DEBUG", DEBUG="true") == ["True"]


def test_the_secret_key_is_random_private_and_kept_across_restarts(tmp_path):
    [key] = settings_of(tmp_path / "one", "SECRET_KEY")
    assert key != OLD_CONSTANT and len(key) >= 50
    stored = tmp_path / "one" / "secret_key"
    assert stored.read_text() == key
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600, "readable by its owner only"
    assert settings_of(tmp_path / "one", "SECRET_KEY") == [key], "the same after a restart"
    [other] = settings_of(tmp_path / "two", "SECRET_KEY")
    assert other != key, "no two installations share a key"
    # An explicit key wins and nothing is written.
    assert settings_of(tmp_path / "three", "SECRET_KEY", SECRET_KEY="k" * 60) == ["k" * 60]
    assert not (tmp_path / "three" / "secret_key").exists()


def deploy_check(home: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "HTTPS")}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "VERITY_HOME": str(home),
             "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", **env},
    )  # fmt: skip


@pytest.mark.slow
def test_check_deploy_is_clean_but_for_the_four_https_checks(tmp_path):
    local = deploy_check(tmp_path)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "System check identified no issues (4 silenced)." in local.stdout
    # Behind HTTPS nothing is silenced: the HTTPS settings are on, and what remains
    # (HSTS for subdomains, preload) is named for the domain owner to decide.
    https = deploy_check(tmp_path, HTTPS="true")
    issues = set(re.findall(r"\((security\.W\d+)\)", https.stdout + https.stderr))
    assert issues == {"security.W005", "security.W021"}, https.stdout + https.stderr
    decided = deploy_check(
        tmp_path, HTTPS="true", SECURE_HSTS_INCLUDE_SUBDOMAINS="true", SECURE_HSTS_PRELOAD="true"
    )
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert "System check identified no issues (0 silenced)." in decided.stdout


def test_the_test_settings_still_serve_the_test_client(client, db):
    # pytest-django's client host ("testserver") is allowed; pages render without DEBUG.
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/no-such-page").status_code == 404


def test_the_chat_and_sign_in_pages_run_only_the_sites_own_scripts(client, db):
    """A Content-Security-Policy: nothing but the site's own scripts, styles, images and
    connections, even if a rendered answer ever slipped something past the sanitizer.
    (The browser tests fail on any console error, a refused resource included.)"""
    for path in ("/accounts/login/", "/"):
        policy = client.get(path, HTTP_HOST="localhost")["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["script-src"] == "'self'"
        assert directives["default-src"] == "'self'"
        assert directives["connect-src"] == "'self'"
        assert directives["frame-ancestors"] == "'none'"
