from django.db import migrations, models


def sizes_of_stored_uploads(apps, schema_editor) -> None:
    """Uploads stored before sizes were kept: read from storage (a file gone counts 0)."""
    Document = apps.get_model("knowledge", "Document")
    uploads = Document.objects.exclude(source_file="").only("pk", "source_file")
    for document in uploads.iterator(chunk_size=1000):
        try:
            size = document.source_file.size
        except OSError:
            continue
        Document.objects.filter(pk=document.pk).update(stored_bytes=size)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0015_document_queued_on"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="stored_bytes",
            field=models.PositiveBigIntegerField(
                db_default=0, default=0, help_text="Size of its stored upload"
            ),
        ),
        migrations.RunPython(sizes_of_stored_uploads, migrations.RunPython.noop),
    ]
