FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 VERITY_HOME=/data
# tesseract reads scanned PDF pages (OCR=auto); without it they are indexed with a warning.
RUN apt-get update && apt-get install -y --no-install-recommends libmagic1 tesseract-ocr tesseract-ocr-eng && rm -rf /var/lib/apt/lists/*
# Not root: the web app and the workers run as this user. /data (VERITY_HOME: the secret
# key, uploads, the model export, static files) is its own; a volume mounted there new
# takes that owner. A volume made by an image that ran as root needs it once:
#   docker compose run --rm --user root migrate chown -R verity: /data
RUN useradd --create-home --uid 10001 verity && mkdir /data && chown verity: /data
WORKDIR /app
COPY pyproject.toml ./
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY . .
RUN pip install --no-cache-dir -e .
USER verity
EXPOSE 8000
# The web server answers (docker-compose.yml gives the workers a probe of their own).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["python", "scripts/healthcheck.py", "/healthz"]
# gunicorn with the timeouts and request limits set in knowledge/management/commands/serve.py.
# Apply migrations before starting a new version (docker-compose.yml's `migrate` service).
CMD ["python", "manage.py", "serve", "--no-worker", "0.0.0.0:8000"]
