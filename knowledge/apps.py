from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"

    def ready(self) -> None:
        from knowledge import login_throttle  # noqa: F401  (connects its signal receivers)
