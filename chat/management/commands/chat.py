"""`manage.py chat --workspace SLUG`: an interactive conversation in the terminal."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat import services
from chat.management.commands.ask import footer
from chat.models import Thread
from citations.normalizer import plain_markers
from knowledge.models import Workspace


class Command(BaseCommand):
    help = "Chat with the knowledge base; follow-up questions keep the conversation's context."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", default="demo")
        parser.add_argument("--debug", action="store_true")

    def handle(self, *args, **options) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace '{options['workspace']}'")
        thread = services.create_thread(
            workspace=workspace, user=workspace.owner, origin=Thread.Origin.CLI
        )
        self.stdout.write(f"Conversation {thread.pk} in '{workspace.slug}'. Empty line quits.")

        def show_progress(event: str, data) -> None:
            if event == "progress":
                self.stderr.write(f"… {data['label']}")

        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question:
                break
            message = services.post_message(thread=thread, text=question, emit=show_progress)
            self.stdout.write(f"verity> {plain_markers(message.resolved_content)}")
            for line in footer(message, debug=options["debug"]):
                self.stdout.write(line)
