"""Serve the web app with gunicorn and Celery workers beside it: the way to run Verity."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from gunicorn.app.base import BaseApplication
from gunicorn.util import parse_address
from kombu.utils.url import sanitize_url

logger = logging.getLogger(__name__)

# The one place the web server's limits are set (the Dockerfile and docker-compose.yml
# run this command). gthread: a slow client holds a thread, not a worker process.
GUNICORN_OPTIONS = {
    "worker_class": "gthread",
    # A worker that stops answering its arbiter this long is restarted.
    "timeout": 60,
    # On stop or reload, running requests (a streamed chat answer) get this long.
    "graceful_timeout": 30,
    # An idle keep-alive connection (or one that sends nothing) is closed after this.
    "keepalive": 5,
    # Request line and headers are bounded before Django sees them; bodies are bounded
    # by config/request_limits.py. The line at gunicorn's maximum (0 would be unbounded):
    # a search of 2,000 ASCII characters (the API's own limit, a JSON 400 past it) fits
    # percent-encoded, where the default 4,094 cut some off with an HTML 414; accented
    # letters take 6 bytes encoded and CJK 9, so ~1,300 and ~900 of those fit (a longer
    # query goes as POST /api/search, in a JSON body bounded by DATA_UPLOAD_MAX_MEMORY_SIZE).
    "limit_request_line": 8190,
    "limit_request_fields": 100,
    "limit_request_field_size": 8190,
    "accesslog": "-",
    "worker_int": lambda worker: _exit_now(),
}


def _exit_now() -> None:
    """Ctrl-C, gunicorn's quick stop, ends a web process at once.

    Exiting normally, it would wait for every running request (a streamed answer waits on
    its model) until the arbiter killed it after graceful_timeout, and torch's threads
    abort an interpreter that exits under them. An answer cut short stays pending until
    the thread is next read (chat.services.close_abandoned_answers). SIGTERM, the
    graceful stop, still lets running requests finish.
    """
    os._exit(0)


# The longest path a Unix socket may have is 107 bytes (sun_path, Linux).
_SOCKET_PATH_BYTES = 107


def control_socket_options() -> dict:
    """gunicorn's control socket (for `gunicornc`), this instance's own: VERITY_HOME/
    gunicorn.ctl. Its default, ~/.gunicorn/gunicorn.ctl, is one for all of a user's
    servers: a second instance (`make run ADDR=127.0.0.1:8001`) took it over from the
    first. Off when that path is too long for a socket."""
    path = Path(settings.VERITY_HOME).resolve() / "gunicorn.ctl"
    if len(os.fsencode(path)) > _SOCKET_PATH_BYTES:
        return {"control_socket_disable": True}
    return {"control_socket": str(path)}


class _Gunicorn(BaseApplication):
    """gunicorn's documented custom-application API, serving settings.WSGI_APPLICATION."""

    def __init__(self, options: dict) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        # settings.WSGI_APPLICATION, as runserver loads it.
        from django.core.servers.basehttp import get_internal_wsgi_application

        return get_internal_wsgi_application()


def worker_queues() -> dict[str, list[str]]:
    """The workers serve starts, by name, and the queues each takes from: one only ever
    takes small jobs (the default queue), so an upload never waits for a big one (a bulk
    batch, a large file: indexing.sources._send); the other takes the bulk queue and,
    between its tasks, the default one too."""
    default, bulk = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_BULK_QUEUE
    return {"interactive": [default], "bulk": [bulk, default]}


# On stop, the worker may finish the document in hand this long; then it is stopped at
# once, and the document is indexed again when a worker next starts (config.celery).
WORKER_STOP_SECONDS = 10


def start_worker(name: str, queues: list[str]) -> subprocess.Popen:
    """A worker of one process, named NAME@host, taking `queues`."""
    # A session of its own: Ctrl-C in the terminal reaches the web server, and the worker
    # is stopped by Command._stop, with the process it runs tasks in.
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker",
         "--loglevel", "INFO", "--concurrency", "1", "--hostname", f"{name}@%h",
         "--queues", ",".join(queues)],
        cwd=settings.BASE_DIR, start_new_session=True,
    )


# A worker that dies is started again, at most this many times a minute (one that cannot
# start, a broken setting, is not restarted in a tight loop; it is tried again once the
# minute's restarts are old enough).
WORKER_RESTARTS_PER_MINUTE = 5
WORKER_POLL_SECONDS = 2.0


class WorkerSupervisor(threading.Thread):
    """Polls the workers serve started while gunicorn runs: one that died (killed, out of
    memory, crashed) is logged as an error and started again under its name, whose
    documents left INDEXING it then sends again (config.celery). `workers` is updated in
    place, for Command._stop."""

    def __init__(self, workers: list[subprocess.Popen], specs: list[tuple[str, list[str]]]):
        super().__init__(name="worker-supervisor", daemon=True)
        self.workers, self.specs = workers, specs
        self.restarts: list[float] = []  # when, over the last minute
        self.reported: set[int] = set()  # pids of dead workers logged, awaiting a restart
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stopping.wait(WORKER_POLL_SECONDS):
            for index, (name, queues) in enumerate(self.specs):
                with self.lock:
                    if self.stopping.is_set():
                        return
                    worker = self.workers[index]
                    if worker.poll() is None:
                        continue
                    self._restart(index, name, queues, worker)

    def _restart(
        self, index: int, name: str, queues: list[str], worker: subprocess.Popen
    ) -> None:
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < 60]
        # The arbiter reaps any child it sees exit: its status may be lost to us (0).
        status = f" (exit status {worker.returncode})" if worker.returncode else ""
        if len(self.restarts) >= WORKER_RESTARTS_PER_MINUTE:
            wait = 60 - (now - self.restarts[0])
            if worker.pid not in self.reported:
                self.reported.add(worker.pid)
                logger.error(
                    "The %s worker (pid %d, queues %s) died%s; it has been restarted %d times "
                    "in a minute: next try in %.0f s", name, worker.pid, ", ".join(queues),
                    status, len(self.restarts), wait,
                )
            return
        logger.error(
            "The %s worker (pid %d, queues %s) died%s; starting it again: documents it "
            "left INDEXING are sent again as it starts", name, worker.pid,
            ", ".join(queues), status,
        )
        # What is left of it (the child running its task, when only the main process
        # was killed) goes with it: the new worker's child takes the task again.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signal.SIGKILL)
        self.restarts.append(now)
        self.workers[index] = start_worker(name, queues)

    def stop(self) -> None:
        """No restart from now on (serve is stopping its workers)."""
        with self.lock:
            self.stopping.set()


def bind_address(addrport: str) -> str:
    """runserver's forms: '8000' or 'host:port'."""
    return f"127.0.0.1:{addrport}" if addrport.isdigit() else addrport


def check_bindable(address: str) -> None:
    """CommandError unless `address` can be bound now, so a taken port fails before any
    worker starts. Otherwise serve started both workers under the names a running
    instance's have (a worker starting sends again the documents its namesake left
    INDEXING) and only then gunicorn retried the bind for 5 s and gave up. The socket
    is closed at once: gunicorn binds it again a moment later (a port taken in between
    still fails, as before)."""
    host_port = parse_address(address)  # gunicorn's own reading of the address
    if not isinstance(host_port, tuple):  # a unix socket or an fd: gunicorn's to check
        return
    host, port = host_port
    try:
        info = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                  flags=socket.AI_PASSIVE)[0]
        with socket.socket(info[0], info[1]) as probe:
            # As gunicorn binds: a closed connection's TIME_WAIT is no obstacle.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(info[4])
    except OSError as error:
        raise CommandError(
            f"Cannot listen on {address} ({error.strerror or error}):"
            " another server (perhaps another Verity) uses it. Choose another address, "
            "e.g. `manage.py serve 127.0.0.1:8001` (or `make run ADDR=127.0.0.1:8001`). "
            "No worker was started."
        ) from None


class Command(BaseCommand):
    help = "Run the web server (gunicorn) and, unless --no-worker, the ingestion workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--no-worker",
            action="store_true",
            help="don't start workers (they run elsewhere on CELERY_BROKER_URL)",
        )
        parser.add_argument("--workers", type=int, default=2, help="web server processes")
        parser.add_argument("--threads", type=int, default=16, help="threads per process")

    def handle(self, *args, **options) -> None:
        address = bind_address(options["addrport"])
        check_bindable(address)
        workers: list[subprocess.Popen] = []
        if not options["no_worker"]:
            for name, queues in worker_queues().items():
                self.stdout.write(
                    f"Starting the {name} worker ({', '.join(queues)}) on "
                    f"{sanitize_url(settings.CELERY_BROKER_URL)}"  # no password in the log
                )
                workers.append(start_worker(name, queues))
        server = _Gunicorn({
            **GUNICORN_OPTIONS,
            **control_socket_options(),
            "bind": [address],
            "workers": options["workers"],
            "threads": options["threads"],
        })
        supervisor = WorkerSupervisor(workers, list(worker_queues().items()))
        if workers:
            supervisor.start()
        try:
            server.run()  # until SIGINT/SIGTERM; exits with SystemExit
        finally:
            supervisor.stop()
            self._stop([w for w in workers if w.poll() is None])

    def _stop(self, workers: list[subprocess.Popen]) -> None:
        """Warm shutdown for WORKER_STOP_SECONDS (or until Ctrl-C again), then cold; all
        workers at once, so stopping two takes no longer than one."""
        if not workers:
            return
        self.stdout.write(
            f"Stopping the workers: they may finish the documents in hand for "
            f"{WORKER_STOP_SECONDS} s (Ctrl-C to stop them now; an unfinished document is "
            "indexed again when a worker next starts)"
        )
        # Gunicorn's handler still holds SIGINT, queueing it for an arbiter that has stopped.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for stop, wait in ((signal.SIGTERM, WORKER_STOP_SECONDS), (signal.SIGQUIT, 5)):
            try:
                for worker in workers:
                    if worker.poll() is None:
                        worker.send_signal(stop)  # it stops the process it runs tasks in
                deadline = time.monotonic() + wait
                for worker in workers:
                    worker.wait(timeout=max(0.0, deadline - time.monotonic()))
                return
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                continue
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
