"""Serve the web app with a Celery worker beside it: the embedded-default way to run Verity."""

from __future__ import annotations

import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the web server and, unless --no-worker, an ingestion worker process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--no-worker",
            action="store_true",
            help="don't start a worker (one runs elsewhere on CELERY_BROKER_URL)",
        )

    def handle(self, *args, **options) -> None:
        worker = None
        if not options["no_worker"]:
            self.stdout.write(f"Starting a Celery worker on {settings.CELERY_BROKER_URL}")
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker",
                 "--loglevel", "INFO", "--concurrency", "1"],
                cwd=settings.BASE_DIR,
            )
        try:
            call_command("runserver", options["addrport"], use_reloader=False)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=30)
