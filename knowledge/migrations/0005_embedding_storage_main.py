from django.db import migrations

# pgvector stores vectors EXTERNAL: with chunk text and tsvector beside it, the
# row passes the 2 kB TOAST threshold and every vector moves out of line, so an
# exact scan inside a scope paid one TOAST lookup per chunk. MAIN keeps vectors
# in the row (text and tsvector are compressed or moved instead). Existing rows
# keep their layout until rewritten (VACUUM FULL knowledge_chunk).


class Migration(migrations.Migration):

    dependencies = [("knowledge", "0004_postings")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE knowledge_chunk ALTER COLUMN embedding SET STORAGE MAIN",
            "ALTER TABLE knowledge_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL",
        )
    ]
