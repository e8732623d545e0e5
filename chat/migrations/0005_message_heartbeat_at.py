from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0004_thread_origin"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
