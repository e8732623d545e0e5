"""Settings for the test suite: the real database and embedder, tasks run inline.

Tests that need a real worker start one as a subprocess with config.settings.
"""

from config.settings import *  # noqa: F403
from config.settings import VERITY_HOME

CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
MEDIA_ROOT = VERITY_HOME / "test-media"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
