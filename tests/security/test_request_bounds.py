"""Hostile request bodies get a clear 4xx, never a 500 or a hang (issue 9, items 6 and 7)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from chat.models import Message, Thread
from knowledge.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user, workspace) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def thread(api) -> dict:
    response = api.post("/api/threads", {"title": "Tides", "workspace": "acme"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def make_upload(size: int, name: str = "big.txt") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, b"x" * size, content_type="text/plain")


# --- Item 7: JSON nesting ------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def json_paths(thread: dict) -> list[str]:
    return ["/api/threads", f"/api/threads/{thread['id']}/messages", "/api/documents"]


# 1,000 levels (2 KB) overflow the json module's recursion; 40 parse but exceed the limit.
@pytest.mark.parametrize("depth", [1000, 40])
def test_deeply_nested_json_is_a_400_with_a_message_on_every_endpoint(api, thread, depth):
    for path in json_paths(thread):
        response = api.post(path, nested(depth), content_type="application/json")
        assert response.status_code == 400, (path, response.status_code)
        assert response.json() == {"detail": "JSON parse error - nested deeper than 32 levels"}
    # Nothing was created by the refused requests.
    assert Thread.objects.count() == 1
    assert not Message.objects.exists() and not Document.objects.exists()


def test_nested_values_inside_an_object_are_refused_too(api, thread):
    body = '{"title": ' + nested(5000) + ', "workspace": "acme"}'
    response = api.post("/api/threads", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested deeper than" in response.json()["detail"]


def test_a_lone_surrogate_in_a_json_body_is_a_400(api, thread):
    """JSON may escape half a character; echoed in a validation error, it made DRF's
    renderer fail (a 500 on search, workspace and mention errors: an outside audit's)."""
    thread_messages = f"/api/threads/{thread['id']}/messages"
    for path, body, method in (
        ("/api/search", '{"q": "x", "\\ud800": 1}', "post"),
        ("/api/workspaces/acme", '{"retrieval_mode": "\\ud800"}', "patch"),
        (thread_messages, '{"content": "Hi", "mentions": [{"kind": "\\udc00", "id": 1}]}',
         "post"),
        (thread_messages, '{"content": "launch \\ud83d"}', "post"),
    ):
        response = getattr(api, method)(path, body, content_type="application/json")
        assert response.status_code == 400, (path, response.content)
        assert "lone UTF-16 surrogate" in response.json()["detail"]
    assert not Message.objects.exists()
    # A pair escaped in JSON is one whole character.
    response = api.post("/api/threads", '{"title": "\\ud83d\\ude80", "workspace": "acme"}',
                        content_type="application/json")
    assert response.status_code == 201 and response.json()["title"] == "\U0001f680"


def test_ordinary_json_still_parses(api, thread):
    response = api.post("/api/threads", {"title": "Moon", "workspace": "acme"}, format="json")
    assert response.status_code == 201 and response.json()["title"] == "Moon"


# --- Item 6: bodies over a limit are refused before they are read ------------------


@pytest.fixture
def small_json_limit(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000


def test_a_json_body_over_the_limit_is_a_413_before_parsing(api, small_json_limit):
    body = json.dumps({"title": "x" * 5000, "workspace": "acme"})
    response = api.post("/api/threads", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is 4.9 KiB; the limit is 1000 bytes."}
    assert not Thread.objects.exists()


def test_a_declared_length_over_the_limit_is_refused_without_reading(api, client, settings):
    # The test client's body is 2 bytes; reading the declared length would fail loudly.
    huge = {"CONTENT_LENGTH": str(10**12)}
    response = api.post("/api/documents", b"{}", content_type="application/json", **huge)
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is 953,674.3 MiB; the limit is 2.5 MiB."}
    multipart = "multipart/form-data; boundary=x"
    response = api.post("/api/documents", b"--", content_type=multipart, **huge)
    limit = f"{settings.INGEST_MAX_REQUEST_BYTES / 2**20:,.1f}".removesuffix(".0")
    assert response.status_code == 413
    assert response.json()["detail"] == (
        f"The request body is 953,674.3 MiB; the limit is {limit} MiB."
    )
    # Pages get the message as plain text (the admin's add-sources form posts here).
    response = client.post("/admin/login/", b"--", content_type=multipart, **huge)
    assert response.status_code == 413 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode().startswith("The request body is 953,674.3 MiB")
    assert not Document.objects.exists()


def test_a_malformed_content_length_is_a_400(api):
    response = api.post(
        "/api/threads", b"{}", content_type="application/json", CONTENT_LENGTH="12abc"
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid Content-Length: '12abc'"}


def test_a_nul_character_in_the_address_is_a_400_not_a_500(api):
    for response in (
        api.get("/api/threads?workspace=a%00b"),
        api.post("/api/threads?workspace=a%00b", {"title": "Q"}, format="json"),
    ):
        assert response.status_code == 400
        assert response.json() == {
            "detail": "The address holds a NUL character (%00); remove it."
        }
    assert not Thread.objects.exists()


def test_an_uploaded_file_over_the_limit_on_a_page_is_a_413_with_its_name(client, settings):
    # The admin's forms are parsed (by the CSRF check) before any view: the limit applies.
    settings.INGEST_MAX_FILE_BYTES = 100
    response = client.post("/admin/login/", {"username": "x", "big": make_upload(2000)})
    assert response.status_code == 413
    assert response.content.decode() == "big.txt: File is larger than the limit of 100 bytes."


# Through `manage.py serve` (gunicorn), with raw sockets: the client declares a body and
# sends little or none of it; the answer must come at once, not after a read that waits.
def raw_post(path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def status_and_body(response: bytes) -> tuple[int, bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.fixture
def token(transactional_db, user, workspace) -> str:
    """Committed, so the served process sees it."""
    return Token.objects.create(user=user).key


def answered(served, raw: bytes) -> tuple[int, bytes, float]:
    started = time.monotonic()
    status, body = status_and_body(served.request(raw, timeout=15))
    return status, body, time.monotonic() - started


MULTIPART = "multipart/form-data; boundary=BOUNDARY"


@pytest.mark.slow
def test_served_a_declared_terabyte_is_refused_at_once_without_sending_it(served, token):
    cases = [
        # A page: with a CSRF cookie (anyone gets one), the CSRF check reads the form.
        ("/accounts/login/", {"Content-Type": MULTIPART, "Cookie": "csrftoken=" + "a" * 32}),
        ("/api/documents", {"Content-Type": MULTIPART, "Authorization": f"Token {token}"}),
        ("/api/threads", {"Content-Type": "application/json", "Authorization": f"Token {token}"}),
    ]
    for path, headers in cases:
        status, body, seconds = answered(
            served, raw_post(path, {**headers, "Content-Length": str(10**12)})
        )
        assert status == 413, (path, status, body[:200])
        assert seconds < 5, (path, seconds)
        assert b"The request body is 953,674.3 MiB; the limit is" in body
    assert not Document.objects.exists() and not Thread.objects.exists()


@pytest.mark.slow
def test_served_an_upload_stops_at_the_file_limit_while_it_streams(served, token):
    # The served process has INGEST_MAX_FILE_BYTES=1000. The client declares 1 MB and
    # sends 200 kB of one file, then waits: the refusal must not wait for the rest.
    part = (
        b"--BOUNDARY\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.txt\"\r\n"
        b"Content-Type: text/plain\r\n\r\n"
    )
    headers = {"Content-Type": MULTIPART, "Authorization": f"Token {token}",
               "Content-Length": "1000000"}  # fmt: skip
    raw = raw_post("/api/documents", headers, part + b"x" * 200_000)
    status, body, seconds = answered(served, raw)
    assert status == 400, body[:300]
    assert json.loads(body) == {"files": ["big.txt: File is larger than the limit of 1000 bytes."]}
    assert seconds < 5
    assert not Document.objects.exists()


@pytest.mark.slow
def test_served_a_body_without_content_length_is_411(served, token):
    headers = {"Content-Type": "application/json", "Authorization": f"Token {token}",
               "Transfer-Encoding": "chunked"}  # fmt: skip
    status, body, seconds = answered(served, raw_post("/api/threads", headers, b"5\r\n[[[[[\r\n"))
    assert status == 411, body[:300]
    assert json.loads(body) == {"detail": "Send the request body with a Content-Length."}
    assert seconds < 5 and not Thread.objects.exists()


@pytest.mark.slow
def test_served_a_long_cjk_query_is_a_414_by_get_and_searched_by_post(
    served, token, local_embedder, settings
):
    # The served process embeds the query: it is given the model the tests exported
    # rather than exporting its own (tens of seconds).
    local_embedder.embed_query("warm")
    models = Path(served.home) / "models"
    models.mkdir(exist_ok=True)
    for exported in (settings.VERITY_HOME / "models").glob("*.onnx"):
        if not (models / exported.name).exists():
            (models / exported.name).symlink_to(exported)
    auth = f"Authorization: Token {token}"
    at_the_bound = "潮" * 2000  # the most `q` holds: 18,000 bytes percent-encoded
    over_the_bound = "潮" * 3000
    for query in (at_the_bound, over_the_bound):
        line = f"GET /api/search?{urlencode({'q': query})} HTTP/1.1"
        status, body, _ = answered(served, f"{line}\r\nHost: 127.0.0.1\r\n{auth}\r\n\r\n".encode())
        assert status == 414, (status, body[:200])  # gunicorn's own page: Django never saw it
        assert b"<title>URI Too Long</title>" in body, body[:200]
    headers = {"Content-Type": "application/json", "Authorization": f"Token {token}"}
    for query, expected in ((at_the_bound, 200), (over_the_bound, 400)):
        payload = json.dumps({"q": query, "workspace": "acme"}, ensure_ascii=False).encode()
        raw = raw_post("/api/search", {**headers, "Content-Length": str(len(payload))}, payload)
        status, body, _ = answered(served, raw)
        assert status == expected, (status, body[:300])
        answer = json.loads(body)
        if expected == 200:
            assert answer["query"] == query and answer["results"] == []  # an empty workspace
        else:  # the API's own bound, as GET says it to a query that fits the line
            assert answer == {"q": ["Ensure this field has no more than 2000 characters."]}


def test_conversations_a_user_holds_in_a_workspace_are_bounded(api, user, workspace, settings):
    """A reader started 300 conversations in 23 s and nothing removes them (an outside
    audit's): past CHAT_MAX_THREADS_PER_USER a new one is a 409 until old ones go. An
    agent's conversations (MCP) are bounded apart and still start."""
    from chat import passages

    settings.CHAT_MAX_THREADS_PER_USER = 3
    started = [api.post("/api/threads", {"title": "x" * 200}, format="json")
               for _ in range(3)]
    assert [r.status_code for r in started] == [201] * 3
    refused = api.post("/api/threads", {"title": "one more"}, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json() == {"detail": (
        "You already have 3 conversations in this workspace; the limit is 3 "
        "(CHAT_MAX_THREADS_PER_USER). Delete old conversations to start a new one."
    )}
    assert Thread.objects.filter(user=user, workspace=workspace).count() == 3
    agents = passages.conversation(user=user, workspace=workspace, conversation_id=None,
                                   title="an agent's")
    assert agents.origin == Thread.Origin.MCP
    assert api.delete(f"/api/threads/{started[0].json()['id']}").status_code == 204
    assert api.post("/api/threads", {}, format="json").status_code == 201
