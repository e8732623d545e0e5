import django.db.models.deletion
from django.db import migrations, models

# The HNSW index is dropped around the backfill and built again: updating every
# row would otherwise insert each vector into the graph once more, one by one.
BACKFILL = """
DROP INDEX IF EXISTS chunk_embedding_hnsw;
UPDATE knowledge_chunk c SET workspace_id = d.workspace_id
FROM knowledge_document d WHERE d.id = c.document_id;
CREATE INDEX chunk_embedding_hnsw ON knowledge_chunk
USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
"""


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0005_embedding_storage_main")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="knowledge.workspace",
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="chunk",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="knowledge.workspace",
            ),
        ),
    ]
