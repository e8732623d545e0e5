from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        # Imported for the signal receivers they connect.
        from knowledge import accounts, login_throttle  # noqa: F401
