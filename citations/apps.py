from django.apps import AppConfig


class CitationsConfig(AppConfig):
    name = "citations"
