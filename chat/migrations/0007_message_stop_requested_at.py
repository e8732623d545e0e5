from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0006_citation_references_set_null_in_database"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="stop_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
