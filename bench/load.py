"""Concurrent chat load against a real server, the language model faked on loopback.

    .venv/bin/python bench/load.py [--clients 32] [--seconds 60] [--shared-thread]
                                   [--server auto|gunicorn|runserver] [--workers 2]
                                   [--threads 16] [--llm-delay-ms 0]

Setup (on the dev database, like the other benches): a user "bench-load" with a
DRF token, a member of the workspace "bench-load" that holds sample_corpus/
(ingested once, reused on later runs); the threads of earlier runs are deleted.

Then, all on 127.0.0.1:
- a scripted OpenAI-compatible model (tests/scripted_llm.py) runs in this
  process and never runs out: with no tool result after the last user message
  it asks for search_knowledge_base, else it answers citing the first two
  passages its search showed (on a fresh shared thread, concurrent turns are
  shown different numbers, and a number a turn was not shown is dropped);
- the web server runs as a subprocess with LLM_PROVIDER=openai pointed at it:
  gunicorn (gthread, --workers x --threads) when installed, else
  `manage.py runserver --noreload` (threaded); its output goes to a log file;
- every client (a thread with its own httpx.Client, timeout 30 s) posts to its
  own conversation, or all to one with --shared-thread (which exercises the
  per-thread row locks), back to back, for --seconds.

One warm-up post per client comes first (each server process loads the
embedding model on its first search) and is reported apart. Printed: requests,
errors (non-2xx, exceptions, timeouts, and 2xx replies that are not a complete
answer whose citations are exactly the two numbers the model wrote) by kind,
throughput, latency percentiles, the server-side time excluding the model (the
reply's metadata.server_ms), the peak number of PostgreSQL connections, and the
first distinct errors of the server log. Exits 1 when any request failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from _sample_corpus import ensure_indexed  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from chat.models import Thread  # noqa: E402
from knowledge.models import Chunk, Workspace  # noqa: E402
from tests.scripted_llm import ScriptedLLM, answer, tool_call  # noqa: E402

SLUG = "bench-load"
USERNAME = "bench-load"
TIMEOUT = 30.0
READY_SECONDS = 120.0
STOP_SECONDS = 30.0
MAX_REQUESTS_PER_CLIENT = 100_000  # a hard bound besides --seconds
ANSWER = (
    "The handbook states this directly [{0}]. The launch notes give the date and the "
    "owner of the follow-up work [{1}]."
)
TOPICS = [
    "tidewatch 2.0 launch date",
    "security incident reporting deadline",
    "on-call shift handover time",
    "forecast accuracy RMS harmonic stations",
    "tidewatch license commercial use",
    "M2 constituent period hours",
    "launch budget version 2.0 marketing",
    "how to install tidewatch",
    "which tide data sources are used",
    "code review approval rules",
    "release process versioning",
    "high and low water time error minutes",
    "harmonic prediction function amplitude phase",
    "who owns the launch checklist",
    "on-call escalation pager",
    "travel expense policy",
]
QUESTION = re.compile(r"question \d+: (?P<topic>.+)\?$")
PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)  # a numbered passage in a tool result
CITED = re.compile(r"\[(\d+)\]")


# --- The model -----------------------------------------------------------------------


class EndlessLLM(ScriptedLLM):
    """Never exhausted: search, then cite the first two passages shown; optionally slow."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.requests = deque(maxlen=16)  # the base class keeps every request otherwise
        self.delay = delay
        self.calls = Counter()
        self._lock = threading.Lock()
        # http.server listens with a backlog of 5; a burst of 32 turns overflows it
        # and the kernel's SYN retries (1 s, 3 s...) would show up as our latency.
        self.server.socket.listen(256)

    def _next(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        results = [m["content"] for m in messages[last_user + 1 :] if m.get("role") == "tool"]
        if self.delay:
            time.sleep(self.delay)
        if results or not request.get("tools"):
            with self._lock:
                self.calls["answer"] += 1
            shown = list(dict.fromkeys(PASSAGE.findall("\n".join(results))))
            return answer(ANSWER.format(*(shown + ["1", "2"])[:2]))
        text = messages[last_user]["content"] if last_user >= 0 else ""
        match = QUESTION.search(text)
        with self._lock:
            self.calls["search"] += 1
        return tool_call("search_knowledge_base", {"query": match["topic"] if match else text})


# --- Setup on the dev database -------------------------------------------------------


def ensure_fixture() -> str:
    """The user, its token and workspace, the corpus; returns the token key."""
    user = get_user_model().objects.get_or_create(username=USERNAME)[0]
    token = Token.objects.get_or_create(user=user)[0]
    workspace = Workspace.objects.get_or_create(
        slug=SLUG, defaults={"name": "bench load", "owner": user}
    )[0]
    workspace.members.add(user)
    started = time.perf_counter()
    indexed = ensure_indexed(workspace)
    chunks = Chunk.objects.filter(document__workspace=workspace).count()
    old = Thread.objects.filter(user=user).count()
    Thread.objects.filter(user=user).delete()
    print(
        f"fixture: workspace '{SLUG}' with {workspace.documents.count()} documents, "
        f"{chunks} chunks ({f'indexed {indexed} now' if indexed else 'reused'}, "
        f"{time.perf_counter() - started:.1f}s); deleted {old} threads of earlier runs"
    )
    return token.key


# --- The server ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(kind: str, port: int, workers: int, threads: int) -> list[str]:
    if kind == "gunicorn":
        return [
            sys.executable, "-m", "gunicorn", "config.wsgi",
            "-k", "gthread", "--workers", str(workers), "--threads", str(threads),
            "--bind", f"127.0.0.1:{port}", "--timeout", "60", "--graceful-timeout", "10",
        ]
    return [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]


def start_server(command: list[str], llm_url: str, log_path: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": llm_url,
        "LLM_MODEL": "scripted",
        "LLM_API_KEY": "",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        # One user's clients are the load: a user's limits would refuse most of it.
        "API_THROTTLE_CHAT": "",
        "API_THROTTLE_USER": "",
        "CHAT_MAX_ANSWERS_WRITING": "100000",
    }
    log = log_path.open("wb")
    try:
        # Its own process group: stopping it reaches gunicorn's workers too.
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    finally:
        log.close()


def wait_ready(proc: subprocess.Popen, base_url: str, token: str) -> float:
    started = time.monotonic()
    headers = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=5) as client:
        while time.monotonic() - started < READY_SECONDS:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}")
            try:
                if client.get("/api/threads").status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    raise RuntimeError(f"the server was not ready within {READY_SECONDS:.0f}s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=STOP_SECONDS)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_SECONDS)


LOG_NOISE = re.compile(r"\[INFO\]|Starting development server|Quit the server|^\s*$")
LOG_PROBLEM = re.compile(
    r"error|exception|traceback|fatal|too many|timeout|refused|bad gateway|"
    r"unavailable|warning|critical|\[\d+\] \[", re.IGNORECASE
)


def log_problems(log_path: Path, limit: int = 12) -> tuple[int, list[str]]:
    """Lines of the server log that look like trouble: (count, first distinct ones)."""
    count, distinct, seen = 0, [], set()
    with log_path.open(errors="replace") as handle:
        for line in handle:
            line = line.rstrip()
            if LOG_NOISE.search(line) or not LOG_PROBLEM.search(line):
                continue
            count += 1
            # Ids, ports, pids and times vary; the kind of trouble does not.
            key = re.sub(r"\d+", "#", line)[:160]
            if key not in seen and len(distinct) < limit:
                seen.add(key)
                distinct.append(line[:300])
    return count, distinct


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped because an accept queue was full.

    Machine-wide: a rise during the run points at a listen backlog too small
    for the burst of clients (Django's runserver listens with a backlog of 10).
    """
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            counters = dict(zip(names.split(), values.split(), strict=True))
            return int(counters.get("ListenOverflows", 0))
    return None


# --- PostgreSQL connections ----------------------------------------------------------


class ConnectionWatch(threading.Thread):
    """Samples pg_stat_activity once a second: the peak of backends on our database."""

    def __init__(self, stop: threading.Event, limit_seconds: float) -> None:
        super().__init__(daemon=True)
        self.stop, self.limit_seconds = stop, limit_seconds
        self.peak, self.max_connections, self.error = 0, 0, ""

    def run(self) -> None:
        started = time.monotonic()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SHOW max_connections")
                self.max_connections = int(cursor.fetchone()[0])
                while not self.stop.is_set() and time.monotonic() - started < self.limit_seconds:
                    cursor.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    )
                    self.peak = max(self.peak, cursor.fetchone()[0])
                    self.stop.wait(1.0)
        except Exception as exc:  # a diagnostic only: never fail the run for it
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            connection.close()


# --- Clients -------------------------------------------------------------------------


@dataclass
class Results:
    latencies: list[float] = field(default_factory=list)  # successful requests, seconds
    server_ms: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    error_samples: dict[str, str] = field(default_factory=dict)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, seconds: float, server_ms: float | None) -> None:
        with self.lock:
            self.requests += 1
            self.latencies.append(seconds)
            if server_ms is not None:
                self.server_ms.append(server_ms)

    def fail(self, kind: str, detail: str) -> None:
        with self.lock:
            self.requests += 1
            self.errors[kind] += 1
            self.error_samples.setdefault(kind, detail[:300])


def post_once(client: httpx.Client, thread_id: int, text: str, results: Results) -> bool:
    """One post; False when it failed."""
    started = time.perf_counter()
    try:
        response = client.post(f"/api/threads/{thread_id}/messages", json={"content": text})
    except httpx.TimeoutException as exc:
        results.fail(f"timeout ({type(exc).__name__})", str(exc))
        return False
    except httpx.HTTPError as exc:
        results.fail(f"exception {type(exc).__name__}", str(exc))
        return False
    elapsed = time.perf_counter() - started
    if not 200 <= response.status_code < 300:
        results.fail(f"HTTP {response.status_code}", response.text)
        return False
    try:
        body = response.json()
        numbers = [c["n"] for c in body["citations"]]
        cited = [int(n) for n in CITED.findall(body["content"])]
        status = body["status"]
    except (ValueError, KeyError, TypeError) as exc:
        results.fail(f"HTTP {response.status_code} unreadable body", f"{exc}: {response.text}")
        return False
    if status != "complete" or len(cited) != 2 or numbers != cited:
        results.fail(
            f"HTTP {response.status_code} wrong answer",
            f"status={status} cited={cited} citations={numbers}: {response.text}",
        )
        return False
    results.ok(elapsed, (body.get("metadata") or {}).get("server_ms"))
    return True


def run_clients(
    base_url: str, token: str, thread_ids: list[int], seconds: float,
    proc: subprocess.Popen, *, once: bool = False,
) -> tuple[Results, float]:
    """Every client posts back to back until the deadline (or once each)."""
    results = Results()
    headers = {"Authorization": f"Token {token}"}
    start = threading.Barrier(len(thread_ids) + 1)
    deadline = [0.0]

    def client_loop(index: int, thread_id: int) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        with httpx.Client(
            base_url=base_url, headers=headers, timeout=TIMEOUT, limits=limits
        ) as client:
            start.wait()
            for n in range(1 if once else MAX_REQUESTS_PER_CLIENT):
                if time.monotonic() >= deadline[0] or proc.poll() is not None:
                    break
                topic = TOPICS[(index + n) % len(TOPICS)]
                text = f"Client {index}, question {n}: {topic}?"
                if not post_once(client, thread_id, text, results):
                    time.sleep(0.05)  # no hot loop against a failing server

    workers = [
        threading.Thread(target=client_loop, args=(i, t), daemon=True)
        for i, t in enumerate(thread_ids)
    ]
    for worker in workers:
        worker.start()
    deadline[0] = time.monotonic() + seconds
    started = time.perf_counter()
    start.wait()
    for worker in workers:
        # A client past the deadline finishes its request within TIMEOUT.
        worker.join(timeout=max(0.0, deadline[0] - time.monotonic()) + TIMEOUT + 5)
    elapsed = time.perf_counter() - started
    stuck = sum(w.is_alive() for w in workers)
    if stuck:
        results.fail("client still running at the end", f"{stuck} client threads")
    return results, elapsed


def create_threads(base_url: str, token: str, count: int) -> list[int]:
    headers = {"Authorization": f"Token {token}"}
    ids = []
    with httpx.Client(base_url=base_url, headers=headers, timeout=TIMEOUT) as client:
        for i in range(count):
            response = client.post(
                "/api/threads", json={"title": f"bench-load client {i}", "workspace": SLUG}
            )
            if response.status_code != 201:
                raise RuntimeError(f"POST /api/threads: {response.status_code} {response.text}")
            ids.append(response.json()["id"])
    return ids


# --- Report --------------------------------------------------------------------------


def percentile(ordered: list[float], q: float) -> float:
    """Nearest rank."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def report(title: str, results: Results, elapsed: float) -> None:
    errors = sum(results.errors.values())
    print(f"\n== {title} ==")
    print(f"requests:   {results.requests} in {elapsed:.1f}s")
    print(f"errors:     {errors}" + (f" ({errors / results.requests:.1%})" if errors else ""))
    for kind, count in results.errors.most_common():
        print(f"  {count:6d}  {kind}: {results.error_samples[kind][:160]!r}")
    print(f"throughput: {len(results.latencies) / elapsed:.1f} successful requests/s")
    if results.latencies:
        ms = sorted(seconds * 1000 for seconds in results.latencies)
        print(
            f"latency:    {percentiles(ms, '.0f')}  max {ms[-1]:7.0f} ms  (successful requests)"
        )
    if results.server_ms:
        print(
            f"server ms:  {percentiles(sorted(results.server_ms), '.1f')}"
            "  (metadata.server_ms: the turn's time in the server, the model excluded)"
        )


def percentiles(ordered: list[float], spec: str) -> str:
    return "  ".join(
        f"{name} {percentile(ordered, q):7{spec}} ms"
        for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--shared-thread", action="store_true",
                        help="all clients post to one conversation")
    parser.add_argument("--server", choices=["auto", "gunicorn", "runserver"], default="auto")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=16, help="threads per gunicorn worker")
    parser.add_argument("--llm-delay-ms", type=float, default=0.0,
                        help="the fake model's time per call (0: answers at once)")
    parser.add_argument("--log", type=Path, default=None,
                        help="server log file (default: a new file in the temp dir)")
    args = parser.parse_args()
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients and --seconds must be positive")

    kind = args.server
    if kind == "auto":
        kind = "gunicorn" if importlib.util.find_spec("gunicorn") else "runserver"
    elif kind == "gunicorn" and not importlib.util.find_spec("gunicorn"):
        parser.error("gunicorn is not installed in this environment")

    token = ensure_fixture()
    connection.close()  # the watch thread opens its own

    llm = EndlessLLM(delay=args.llm_delay_ms / 1000)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = server_command(kind, port, args.workers, args.threads)
    if args.log is None:
        handle, name = tempfile.mkstemp(prefix=f"verity-load-{kind}-", suffix=".log")
        os.close(handle)
        log_path = Path(name)
    else:
        log_path = args.log
    mode = "one shared thread" if args.shared_thread else "one thread per client"
    print(f"server:     {' '.join(command[1:])}")
    print(f"server log: {log_path}")
    print(f"model:      scripted at {llm.base_url}, {args.llm_delay_ms:g} ms per call")
    print(f"load:       {args.clients} clients, {mode}, {args.seconds:g}s, timeout {TIMEOUT:g}s")

    stop = threading.Event()
    watch = ConnectionWatch(stop, limit_seconds=args.seconds + READY_SECONDS + 4 * TIMEOUT)
    overflows_before = listen_overflows()
    proc = start_server(command, llm.base_url, log_path)
    failed = True
    try:
        ready = wait_ready(proc, base_url, token)
        print(f"ready:      after {ready:.1f}s")
        watch.start()
        if args.shared_thread:
            thread_ids = create_threads(base_url, token, 1) * args.clients
        else:
            thread_ids = create_threads(base_url, token, args.clients)

        warm, warm_elapsed = run_clients(
            base_url, token, thread_ids, TIMEOUT, proc, once=True
        )
        report("warm-up: one post per client (not counted below)", warm, warm_elapsed)
        calls_before = Counter(llm.calls)
        results, elapsed = run_clients(base_url, token, thread_ids, args.seconds, proc)
        report(f"{args.clients} clients, {mode}, {kind}", results, elapsed)
        calls = llm.calls - calls_before
        print(f"model calls: {calls['search']} searches, {calls['answer']} answers")
        failed = bool(results.errors or warm.errors)
    finally:
        stop.set()
        exited = proc.poll()
        stop_server(proc)
        llm.close()
        if watch.ident is not None:
            watch.join(timeout=5)
        if watch.max_connections:
            print(
                f"postgres:   peak {watch.peak} connections to the database "
                f"(max_connections {watch.max_connections}, all clients of the cluster)"
            )
        elif watch.error:
            print(f"postgres:   connection watch failed: {watch.error}")
        overflows_after = listen_overflows()
        if overflows_before is not None and overflows_after is not None:
            print(
                f"kernel:     {overflows_after - overflows_before} connections dropped on a full "
                "accept queue during the run (TcpExt ListenOverflows, machine-wide)"
            )
        if exited is not None:
            print(f"server:     exited early with code {exited}")
        count, problems = log_problems(log_path)
        print(f"server log: {count} problem lines" + (", first distinct:" if problems else ""))
        for line in problems:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
