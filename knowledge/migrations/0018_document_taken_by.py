from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0017_workspace_readers"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="taken_by",
            field=models.CharField(
                blank=True, db_default="", default="",
                help_text="The worker whose indexing task last took it", max_length=255,
            ),
        ),
    ]
