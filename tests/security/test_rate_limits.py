"""API rate limits (429 JSON with Retry-After) and failed sign-ins (logged, throttled)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from chat import services
from knowledge.models import SignInFailures

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def assert_throttled(response) -> None:
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    assert "throttled" in response.json()["detail"]
    assert int(response["Retry-After"]) > 0


def test_a_user_past_the_api_rate_gets_a_429_with_retry_after(settings, api):
    settings.API_THROTTLE_USER = "3/minute"
    for _ in range(3):
        assert api.get("/api/workspaces").status_code == 200
    assert_throttled(api.get("/api/workspaces"))


def test_anonymous_requests_are_throttled_per_address(settings):
    settings.API_THROTTLE_ANON = "2/minute"
    client = APIClient()
    for _ in range(2):
        assert client.get("/api/workspaces").status_code == 401
    assert_throttled(client.get("/api/workspaces"))
    other = APIClient(REMOTE_ADDR="10.0.0.9")
    assert other.get("/api/workspaces").status_code == 401


def test_a_long_forwarded_address_is_throttled_not_a_500(settings):
    """Behind proxies (NUM_PROXIES) the address is what the header says: any length."""
    settings.API_THROTTLE_ANON = "2/minute"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    client = APIClient(HTTP_X_FORWARDED_FOR="a" * 300)
    for _ in range(2):
        assert client.get("/api/workspaces").status_code == 401
    assert_throttled(client.get("/api/workspaces"))
    other = APIClient(HTTP_X_FORWARDED_FOR="a" * 299 + "b")
    assert other.get("/api/workspaces").status_code == 401


def test_chat_turns_have_a_stricter_rate_of_their_own(settings, workspace, user, api):
    settings.API_THROTTLE_USER = "100/minute"
    settings.API_THROTTLE_CHAT = "1/minute"
    thread = services.create_thread(workspace=workspace, user=user, title="Harbour")
    first = api.post(f"/api/threads/{thread.pk}/messages", {"content": "When is the ferry?"},
                     format="json")
    assert first.status_code in (200, 201), first.content[:500]
    # A stream asked for: the refusal is JSON all the same.
    second = api.post(f"/api/threads/{thread.pk}/messages", {"content": "And back?"},
                      format="json", HTTP_ACCEPT="text/event-stream")
    assert_throttled(second)
    # Reading the conversation is not a turn.
    assert api.get(f"/api/threads/{thread.pk}/messages").status_code == 200


def test_grounding_checks_have_a_stricter_rate_of_their_own(settings, workspace, user, api):
    """A check costs CPU like a turn's own check: the user rate (1200/minute) let one
    client keep every core busy (an outside audit's)."""
    settings.API_THROTTLE_USER = "100/minute"
    settings.API_THROTTLE_GROUNDING = "2/minute"
    settings.API_THROTTLE_CHAT = "1/minute"
    body = {"answer": "The office opens at 09:00 [1].",
            "passages": ["The harbour office opens at 09:00 on weekdays."]}
    for _ in range(2):
        response = api.post("/api/grounding/check", body, format="json")
        assert response.status_code == 200, response.content
    assert_throttled(api.post("/api/grounding/check", body, format="json"))
    # Counted apart from turns: checking answers does not use up asking.
    thread = services.create_thread(workspace=workspace, user=user, title="Harbour")
    turn = api.post(f"/api/threads/{thread.pk}/messages", {"content": "When is the ferry?"},
                    format="json")
    assert turn.status_code in (200, 201), turn.content[:500]


def sign_in(client, password: str, address: str = "192.0.2.7"):
    return client.post("/accounts/login/", {"username": "alice", "password": password},
                       REMOTE_ADDR=address)


def test_failed_sign_ins_are_logged_and_throttled_per_username_and_address(
    settings, user, client, caplog
):
    settings.LOGIN_FAILURES_LIMIT = 3
    with caplog.at_level(logging.WARNING, logger="django.security"):
        for _ in range(3):
            assert sign_in(client, "wrong-guess-1").status_code == 200
    failures = [r for r in caplog.records if r.name == "django.security"]
    assert len(failures) == 3
    message = failures[-1].getMessage()
    assert "'alice'" in message and "192.0.2.7" in message and "3 of 3" in message
    assert "wrong-guess-1" not in caplog.text

    # The right password, from the throttled address: refused, saying why.
    refused = sign_in(client, "pw")
    assert refused.status_code == 200
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    assert "Sign-in refused for username 'alice' from 192.0.2.7" in caplog.text

    # Another address is not held back by this one's failures.
    assert sign_in(client, "pw", address="198.51.100.4").status_code == 302


def test_a_successful_sign_in_clears_the_failures(settings, user, client):
    settings.LOGIN_FAILURES_LIMIT = 2
    assert sign_in(client, "wrong").status_code == 200
    assert sign_in(client, "pw").status_code == 302
    client.logout()
    assert sign_in(client, "wrong").status_code == 200
    assert sign_in(client, "pw").status_code == 302


def test_one_address_spraying_a_password_over_usernames_is_refused(
    settings, user, client, caplog
):
    """One address tried a password on 150 usernames, one each, all checked (~0.9 s of
    hashing each) and none refused (an outside audit's): past LOGIN_FAILURES_PER_ADDRESS
    failures from it, any username is refused before its password is checked."""
    settings.LOGIN_FAILURES_LIMIT = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 4

    def attempt(username: str, password: str, address: str = "192.0.2.7"):
        return client.post("/accounts/login/", {"username": username, "password": password},
                           REMOTE_ADDR=address)

    # A right password takes back its own attempt: it is no failure.
    assert attempt("alice", "pw").status_code == 302
    client.logout()
    for i in range(4):
        page = attempt(f"user{i}", "Spring2026!").content.decode()
        assert "Too many failed sign-ins" not in page
    with caplog.at_level(logging.WARNING, logger="django.security"):
        refused = attempt("user4", "Spring2026!")
    assert "Too many failed sign-ins from your address: try again later." in (
        refused.content.decode())
    assert "4 failed attempts from that address" in caplog.text
    # Alice, never wrong herself, is refused from there too; from elsewhere she signs in.
    assert attempt("alice", "pw").status_code == 200
    assert "_auth_user_id" not in client.session
    assert attempt("alice", "pw", address="198.51.100.4").status_code == 302
    # The API's sign-in shares the rule.
    token = APIClient().post("/api/auth/token", {"username": "alice", "password": "pw"},
                             format="json", REMOTE_ADDR="192.0.2.7")
    assert token.status_code == 429, token.content
    assert token.json()["detail"].startswith(
        "Too many failed sign-ins from your address; try again later.")


def test_the_admin_sign_in_says_it_was_throttled(settings, staff, client):
    settings.LOGIN_FAILURES_LIMIT = 2
    settings.LOGIN_FAILURES_WINDOW = 900

    def admin_sign_in(password: str):
        return client.post("/admin/login/", {"username": "root", "password": password},
                           REMOTE_ADDR="192.0.2.9")

    wrong = admin_sign_in("wrong").content.decode()
    assert "Please enter the correct username and password" in wrong
    assert "Too many failed sign-ins" not in wrong
    admin_sign_in("wrong")
    refused = admin_sign_in("pw")  # the right password, once throttled
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    page = refused.content.decode()
    assert "Too many failed sign-ins for this username from your address" in page
    assert "in at most 15 minutes" in page
    assert "Please enter the correct username and password" not in page


@pytest.mark.django_db(transaction=True)
def test_failed_sign_ins_in_another_web_process_count_here(user, settings):
    """`serve` runs two web processes: counted in each one's memory, a client whose
    requests alternated between them was let through twice as many failures, and in
    with the right password during its lockout."""
    import os

    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    from tests.workers import database_url, manage

    user.set_password("harbour-lights")
    user.save()
    settings.LOGIN_FAILURES_LIMIT = 5
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": database_url(), "LOGIN_FAILURES_LIMIT": "5"}
    env.pop("CACHE_URL", None)
    fail_five = (
        "from django.contrib.auth import authenticate\n"
        "from django.test import RequestFactory\n"
        "for _ in range(5):\n"
        f"    authenticate(RequestFactory().post('/'), username={user.username!r}, "
        "password='wrong')\n"
    )
    result = manage(env, "shell", "-c", fail_five, timeout=120)
    assert result.returncode == 0, result.stderr
    right = {"username": user.username, "password": "harbour-lights"}
    assert authenticate(RequestFactory().post("/"), **right) is None  # locked out here too
    SignInFailures.objects.all().delete()
    assert authenticate(RequestFactory().post("/"), **right) == user


@pytest.mark.django_db(transaction=True)
def test_parallel_failed_sign_ins_are_each_counted(user, settings):
    """A burst of guesses in parallel: each counts (a cache's get-then-set counted 29 of
    160), and the count keeps the window from the first failure."""
    import threading
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from knowledge import login_throttle

    def guess() -> None:
        try:
            for _ in range(10):
                login_throttle.reserve_attempt(username=user.username, address="10.0.0.9")
        finally:
            connection.close()

    threads = [threading.Thread(target=guess) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert login_throttle.failures(username=user.username, address="10.0.0.9") == 40
    assert login_throttle.failures(username=user.username, address="10.0.0.8") == 0
    # The window is from the first failure: past it, counting starts again.
    SignInFailures.objects.update(since=timezone.now() - timedelta(
        seconds=settings.LOGIN_FAILURES_WINDOW + 1))
    assert login_throttle.failures(username=user.username, address="10.0.0.9") == 0
    assert login_throttle.reserve_attempt(username=user.username, address="10.0.0.9").count == 1


def in_parallel(count: int, work) -> list:
    """`work(i)` in `count` threads released at once (a barrier), each on its own
    database connection: the results, in order."""
    import threading

    from django.db import connection

    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait(30)
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - reported by the test's assertions
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_passwords_check_at_most_the_limit(user, settings):
    """20 guesses at once, limit 5: each one read a count under the limit before any was
    counted, and all 20 passwords were checked (audit 3, finding 2)."""
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    from knowledge import login_throttle

    settings.LOGIN_FAILURES_LIMIT = 5

    def guess(i: int) -> bool:
        request = RequestFactory().post("/", REMOTE_ADDR="192.0.2.50")
        assert authenticate(request, username=user.username, password=f"wrong{i}") is None
        return not getattr(request, "login_throttled", False)  # its password was checked

    checked = in_parallel(20, guess)
    assert all(isinstance(result, bool) for result in checked), checked
    assert sum(checked) == 5
    assert SignInFailures.objects.get(key=login_throttle._key(user.username, "192.0.2.50")
                                      ).count == 5
    # The right password is refused too, for the rest of the window.
    request = RequestFactory().post("/", REMOTE_ADDR="192.0.2.50")
    assert authenticate(request, username=user.username, password="pw") is None
    assert request.login_throttled


def test_a_lockout_says_how_long_it_has_left(settings, user):
    """Six minutes into a 15-minute lockout, Retry-After said 900 (audit 3, finding 9)."""
    from datetime import timedelta

    from django.utils import timezone

    settings.LOGIN_FAILURES_LIMIT = 2
    settings.LOGIN_FAILURES_WINDOW = 900
    client = APIClient(REMOTE_ADDR="192.0.2.60")
    for _ in range(2):
        wrong = client.post("/api/auth/token", {"username": "alice", "password": "no"},
                            format="json")
        assert wrong.status_code == 400
    SignInFailures.objects.update(since=timezone.now() - timedelta(seconds=360))
    refused = client.post("/api/auth/token", {"username": "alice", "password": "pw"},
                          format="json")
    assert refused.status_code == 429
    assert 535 <= int(refused["Retry-After"]) <= 541
    assert f"in {refused['Retry-After']} seconds" in refused.json()["detail"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("counted_in", ["database", "redis"])
def test_parallel_requests_get_no_more_than_the_rate(settings, user, counted_in):
    """30 requests at once where the rate is 10/hour: DRF's history in the cache was
    read, appended to and written back, so parallel requests all got through (audit 3,
    finding 3: 40 of 40 chat turns at 20/minute), with the database's cache as with
    Redis (CACHE_URL).

    Counted through the cache's own client, with its OPTIONS: a database named there
    (as a TLS setting or a password may be, by CACHE_URL's query) is where the counts go;
    a client made from LOCATION alone lost them (review 4 M2)."""
    import uuid

    import redis
    from rest_framework.authtoken.models import Token

    from knowledge.models import RequestCount
    from tests.workers import REDIS_URL

    prefix = f"rate-test-{uuid.uuid4().hex}"
    counted_db = 11
    server = urlsplit(REDIS_URL)._replace(path="").geturl()  # the database is an option
    if counted_in != "database":
        settings.CACHES = {"default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server, "KEY_PREFIX": prefix, "OPTIONS": {"db": counted_db},
        }}

    settings.API_THROTTLE_USER = "10/hour"
    settings.API_THROTTLE_ANON = "7/hour"
    token = Token.objects.create(user=user).key

    def get(i: int) -> int:
        client = APIClient(HTTP_AUTHORIZATION=f"Token {token}")
        return client.get("/api/workspaces").status_code

    statuses = in_parallel(30, get)
    assert sorted(statuses) == [200] * 10 + [429] * 20, statuses

    def anonymous(i: int) -> int:
        return APIClient(REMOTE_ADDR="192.0.2.70").get("/api/workspaces").status_code

    statuses = in_parallel(30, anonymous)
    assert sorted(statuses) == [401] * 7 + [429] * 23, statuses
    in_redis = redis.Redis.from_url(server, db=counted_db).keys(f"{prefix}:rate:*")
    if counted_in == "database":
        assert RequestCount.objects.count() == 2 and not in_redis
    else:
        assert len(in_redis) == 2 and not RequestCount.objects.exists()


def test_bad_credentials_count_against_the_anonymous_rate(settings, user, workspace):
    """A bogus token or page-link signature was answered 401 before any throttle ran:
    never a 429, however many were sent (audit 3, finding 4)."""
    settings.API_THROTTLE_ANON = "3/hour"
    bogus = APIClient(HTTP_AUTHORIZATION="Token deadbeef", REMOTE_ADDR="192.0.2.80")
    for _ in range(3):
        assert bogus.get("/api/search?q=x").status_code == 401
    assert_throttled(bogus.get("/api/search?q=x"))
    # The address is past its rate whatever it sends without valid credentials.
    assert_throttled(APIClient(REMOTE_ADDR="192.0.2.80").get("/api/workspaces"))
    assert_throttled(APIClient(HTTP_AUTHORIZATION="Bearer nope", REMOTE_ADDR="192.0.2.80")
                     .get("/api/workspaces"))

    signed = APIClient(REMOTE_ADDR="192.0.2.81")
    page = "/api/threads/1/citations/1/pages/1?signature=abc"
    for _ in range(3):
        assert signed.get(page).status_code == 401
    assert_throttled(signed.get(page))
    # Another address is not held back by this one's.
    assert APIClient(REMOTE_ADDR="192.0.2.82").get(page).status_code == 401


def test_a_host_whose_clock_is_behind_counts_in_the_current_window():
    """Web hosts' clocks differ a little: one behind another started its own window over
    at every request near a boundary, and the count with it."""
    from knowledge.throttling import _count_in_table

    now = int(time.time() // 60)

    def count(period: int) -> bool:
        return _count_in_table(key="skewed", limit=2, period=now + period, seconds=60)

    assert count(1)  # a host already in the next window
    assert count(0)  # one a second behind: counted there too
    assert not count(0)
    assert not count(1)
    assert count(2)  # the next window starts over


@contextmanager
def counts_unavailable() -> Iterator[None]:
    """The rate-limit counts table held by another connection (ACCESS EXCLUSIVE, as a
    long migration or a stuck transaction would): a count waits out its lock_timeout
    and fails as a database outage does."""
    import psycopg
    from django.db import connection

    from knowledge.models import RequestCount

    db = connection.settings_dict
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or None, user=db["USER"],
                         password=db["PASSWORD"], dbname=db["NAME"]) as holder:
        holder.execute(f'LOCK TABLE "{RequestCount._meta.db_table}" IN ACCESS EXCLUSIVE MODE')
        yield


@pytest.mark.django_db(transaction=True)
def test_a_bad_token_counted_while_the_database_is_unavailable_is_a_503(settings):
    """Counting a bad token happens in the exception handler: an outage there is the
    API's JSON 503 with Retry-After, like any other, not a 500."""
    from django.db import connection

    settings.API_THROTTLE_ANON = "5/minute"
    with counts_unavailable():
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '300ms'")
        response = APIClient(HTTP_AUTHORIZATION="Token bogus", REMOTE_ADDR="192.0.2.90",
                             raise_request_exception=False).get("/api/workspaces")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "database is unavailable" in response.json()["detail"]
    assert response["Retry-After"] == "5"


@pytest.mark.parametrize("credentials", ["Token bogus", None])
def test_requests_counted_while_redis_is_down_are_a_503(settings, api, credentials):
    """With CACHE_URL a Redis that does not answer, a request can be neither let
    through nor refused by its rate: a JSON 503 with Retry-After, not a 500."""
    import socket

    with socket.socket() as unused:  # a port nothing listens on once closed
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    settings.API_THROTTLE_USER = settings.API_THROTTLE_ANON = "100/minute"
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{port}/0",
    }}
    client = (APIClient(HTTP_AUTHORIZATION=credentials, raise_request_exception=False)
              if credentials else api)
    client.raise_request_exception = False
    response = client.get("/api/workspaces")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "rate-limit counter (Redis) is unavailable" in response.json()["detail"]
    assert response["Retry-After"] == "5"
