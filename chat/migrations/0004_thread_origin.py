from django.db import migrations, models


def agents_own_their_threads(apps, schema_editor):
    # Until now an agent's conversation was known only by the title MCP gave it.
    Thread = apps.get_model("chat", "Thread")
    Thread.objects.filter(title__startswith="MCP: ").update(origin="mcp")


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0003_message_grounding"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="origin",
            field=models.CharField(
                choices=[
                    ("chat", "the chat page or the API"),
                    ("mcp", "an agent over MCP"),
                    ("cli", "the command line (ask, chat)"),
                ],
                default="chat",
                max_length=10,
            ),
        ),
        migrations.RunPython(agents_own_their_threads, migrations.RunPython.noop),
    ]
