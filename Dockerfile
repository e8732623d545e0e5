FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
# tesseract reads scanned PDF pages (OCR=auto); without it they are indexed with a warning.
RUN apt-get update && apt-get install -y --no-install-recommends libmagic1 tesseract-ocr tesseract-ocr-eng && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml ./
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY . .
RUN pip install --no-cache-dir -e .
EXPOSE 8000
# gunicorn with the timeouts and request limits set in knowledge/management/commands/serve.py.
CMD ["python", "manage.py", "serve", "--no-worker", "0.0.0.0:8000"]
