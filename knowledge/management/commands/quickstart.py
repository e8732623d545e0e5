"""Set up a demo workspace with the bundled sample corpus (used by `make run`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from knowledge.models import Workspace
from knowledge.services import workspace_create


class Command(BaseCommand):
    help = "Create a demo user and workspace, and ingest the sample corpus into it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    def handle(self, *args, **options) -> None:
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        if user is None:
            user = users.create_superuser(options["username"], password=options["password"])
            self.stdout.write(
                f"Created superuser '{user.username}' with password '{options['password']}'"
            )
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            workspace = workspace_create(slug=options["workspace"], owner=user, name="Demo")
        workspace.members.add(user)
        call_command(
            "ingest",
            str(settings.BASE_DIR / "sample_corpus"),
            workspace=workspace.slug,
            inline=True,
            stdout=self.stdout,
        )
