"""A job's documents become its own list: a later job registering one shares it."""

from django.db import migrations, models


def copy_job_links(apps, schema_editor) -> None:
    Document = apps.get_model("knowledge", "Document")
    Through = apps.get_model("knowledge", "IngestJob").documents.through
    links = Document.objects.filter(job__isnull=False).values_list("job_id", "pk")
    Through.objects.bulk_create(
        [Through(ingestjob_id=job_id, document_id=pk) for job_id, pk in links.iterator()],
        batch_size=2000,
    )


def copy_back(apps, schema_editor) -> None:
    Document = apps.get_model("knowledge", "Document")
    Through = apps.get_model("knowledge", "IngestJob").documents.through
    # The latest job of each document, as the single link kept it.
    for job_id, document_id in Through.objects.order_by("ingestjob_id").values_list(
        "ingestjob_id", "document_id"
    ):
        Document.objects.filter(pk=document_id).update(job_id=job_id)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0012_document_indexed_by"),
    ]

    operations = [
        # Free the name "documents" on IngestJob for the new field.
        migrations.AlterField(
            model_name="document",
            name="job",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=models.deletion.SET_NULL,
                related_name="+", to="knowledge.ingestjob",
            ),
        ),
        migrations.AddField(
            model_name="ingestjob",
            name="documents",
            field=models.ManyToManyField(blank=True, related_name="jobs", to="knowledge.document"),
        ),
        migrations.RunPython(copy_job_links, copy_back),
        migrations.RemoveField(model_name="document", name="job"),
    ]
