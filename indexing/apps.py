from django.apps import AppConfig


class IndexingConfig(AppConfig):
    name = "indexing"
