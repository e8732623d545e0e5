"""A citation's chunk and document references are nulled by PostgreSQL itself.

Django's SET_NULL nulls the references it can see, then deletes: an entry committed
between those two statements (a search numbering a hit while the indexer swaps the
chunk out) still pointed at the deleted chunk, and the indexer's commit failed on the
deferred foreign-key check. With ON DELETE SET NULL in the database the delete nulls
it too. The action is not deferred (PostgreSQL never defers one); the constraints stay
DEFERRABLE INITIALLY DEFERRED as Django made them. An AlterField of either field would
recreate its constraint without the action: repeat this then.
"""

from django.db import migrations

REFERENCES = (("chunk_id", "knowledge_chunk"), ("document_id", "knowledge_document"))


def _constraint_sql(action: str) -> str:
    steps = []
    for column, table in REFERENCES:
        steps.append(f"""
    SELECT conname INTO name FROM pg_constraint
     WHERE conrelid = 'citations_citationentry'::regclass AND contype = 'f'
       AND confrelid = '{table}'::regclass;
    EXECUTE format('ALTER TABLE citations_citationentry DROP CONSTRAINT %I', name);
    EXECUTE format('ALTER TABLE citations_citationentry ADD CONSTRAINT %I FOREIGN KEY
                    ({column}) REFERENCES {table} (id) {action}
                    DEFERRABLE INITIALLY DEFERRED', name);""")
    return "DO $$ DECLARE name text; BEGIN" + "".join(steps) + "\nEND $$;"


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0005_message_heartbeat_at"),
    ]

    operations = [
        migrations.RunSQL(
            sql=_constraint_sql("ON DELETE SET NULL"),
            reverse_sql=_constraint_sql(""),
        ),
    ]
