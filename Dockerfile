# Courtier in a container: `docker build -t courtier .` then `docker compose up` (compose.yaml)
# starts PostgreSQL beside N crawl workers. The crawl's output and its SQLite store (when no
# PostgreSQL store is given) live in the volume /data; nothing runs as root.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

WORKDIR /opt/courtier
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir '.[postgres]' \
    && useradd --create-home --uid 10001 courtier \
    && mkdir -p /data && chown courtier:courtier /data

USER courtier
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["courtier"]
CMD ["--help"]
