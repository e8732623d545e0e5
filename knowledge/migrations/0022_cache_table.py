"""The table of the default cache (settings.CACHES: the database when CACHE_URL is unset),
where throttles and sign-in failures are counted across web processes."""

from django.core.management import call_command
from django.db import migrations


def create_cache_tables(apps, schema_editor) -> None:
    # Makes the table of every database cache configured, if missing; none for Redis.
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0021_identifier_words")]

    operations = [migrations.RunPython(create_cache_tables, migrations.RunPython.noop)]
