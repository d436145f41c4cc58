# The OpenEnv server of fathom-rlm or gsm8k-multireward (openenv-core's HTTP + WebSocket app
# behind the guard both share). Configured, not run: no container engine runs where this recipe was
# written.
#
# It listens on 0.0.0.0, so it needs bearer tokens: a file with one token per line (one per
# client) mounted as the secret /run/secrets/openenv_token (or one token in $OPENENV_TOKEN).
# Without either it refuses to start with a one-line error.
#
#   docker build -f docker/openenv.Dockerfile -t rl-envs-openenv .
#   docker run -p 8000:8000 -v "$PWD/tokens.txt:/run/secrets/openenv_token:ro" \
#       rl-envs-openenv fathom_rlm.openenv.server.app --host 0.0.0.0 --port 8000 \
#       --llm-base-url http://POLICY_HOST:8001/v1 --llm-model MODEL
#   docker run -p 8000:8000 -v "$PWD/tokens.txt:/run/secrets/openenv_token:ro" \
#       -v /data/gsm8k:/data rl-envs-openenv \
#       gsm8k_multireward.openenv.server.app --host 0.0.0.0 --port 8000 --data /data/test.jsonl
# Stage 1: a wheel of each environment. Building it copies in the code they share (`packages/`,
# linked from each environment's `_vendor`), so the wheels install with nothing else from here.
FROM python:3.11-slim AS wheels
COPY packages /src/packages
COPY environments /src/environments
RUN python -m pip install --no-cache-dir uv \
    && python -m uv build --wheel --out-dir /wheels /src/environments/fathom_rlm \
    && python -m uv build --wheel --out-dir /wheels /src/environments/gsm8k_multireward

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    OPENENV_TOKEN_FILE=/run/secrets/openenv_token

COPY --from=wheels /wheels /wheels
RUN cd /wheels && python -m pip install \
        "$(ls fathom_rlm-*.whl)[openenv]" "$(ls gsm8k_multireward-*.whl)[openenv]"

# The server runs as root so that the sandbox can drop each worker to an unprivileged uid
# (process limits do not bind root). Its network namespace needs CAP_SYS_ADMIN
# (`--cap-add SYS_ADMIN`); without it the sandbox uses its syscall filter instead.
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
ENTRYPOINT ["python", "-m"]
CMD ["fathom_rlm.openenv.server.app", "--host", "0.0.0.0", "--port", "8000", \
     "--llm-base-url", "http://host.docker.internal:8001/v1", "--llm-model", "policy"]
