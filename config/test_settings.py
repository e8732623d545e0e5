"""Settings for the test suite: the real database and embedder, tasks run inline.

Tests that need a real worker start one as a subprocess with config.settings.
"""

import os

from config.settings import *  # noqa: F403
from config.settings import VERITY_HOME

CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
MEDIA_ROOT = VERITY_HOME / "test-media"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# One test database per run: parallel runs on one machine (a developer's and a
# helper's, or two checkouts sharing a server) must not drop each other's.
DATABASES["default"]["TEST"] = {"NAME": f"test_verity_{os.getpid()}"}  # noqa: F405

# No rate limits or sign-in lockouts across the suite (one cache, one address, one user
# in many tests); the tests of those set them.
API_THROTTLE_ANON = API_THROTTLE_USER = API_THROTTLE_CHAT = API_THROTTLE_GROUNDING = ""
LOGIN_FAILURES_LIMIT = 1_000_000
LOGIN_FAILURES_PER_ADDRESS = 1_000_000
