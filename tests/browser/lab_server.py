"""Start and stop a private JupyterLab server for the browser tests.

Everything the server could read or write outside the repository is sent to a
temporary directory: the notebooks it serves (copies, with their stored outputs
removed), Jupyter's runtime, config, data and settings directories, the
IPython profile and the dpframe ledger.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The repository's stored notebooks; the tests only ever read them.
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

#: JupyterLab user settings that keep the page free of pop-ups and off the network.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    # No "Would you like to get notified about official Jupyter news?" toast,
    # and no update check (both would go to the internet).
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Every cell stays in the page: with the default windowing, cells scrolled out
    # of view (the notebooks hold plots now) are not drawn and their prompts read "".
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


@dataclass
class LabServer:
    """A running JupyterLab: where it listens and what it serves."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    root_dir: Path
    runtime_dir: Path
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """``path`` on this server, with the token as a query parameter."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def get_json(self, path: str, timeout: float = 5.0) -> Any:
        """GET an API path, authenticated with the token header."""
        request = urllib.request.Request(
            f"{self.base_url}/{path.lstrip('/')}",
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)

    def log(self) -> str:
        """The server's output so far (for failure messages)."""
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def copy_notebooks(source: Path, target: Path) -> list[Path]:
    """Copy the ``.ipynb`` files, without stored outputs or widget state.

    Whatever the browser shows afterwards was therefore produced by this run,
    never left over from the committed copy.
    """
    target.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in sorted(source.glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
        notebook.get("metadata", {}).pop("widgets", None)
        copy = target / path.name
        copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")
        copies.append(copy)
    return copies


def isolated_env(base: Path) -> dict[str, str]:
    """The environment for the server (and so its kernels), isolated under ``base``."""
    dirs = {
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "JUPYTER_CONFIG_DIR": base / "config",
        "JUPYTER_DATA_DIR": base / "data",
        "JUPYTERLAB_SETTINGS_DIR": base / "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": base / "lab-workspaces",
        "IPYTHONDIR": base / "ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    for name, settings in LAB_SETTINGS.items():
        settings_file = dirs["JUPYTERLAB_SETTINGS_DIR"] / name
        settings_file.parent.mkdir(parents=True, exist_ok=True)
        settings_file.write_text(json.dumps(settings), encoding="utf-8")
    env = dict(os.environ)
    env.update({name: str(path) for name, path in dirs.items()})
    env["DPFRAME_LEDGER"] = str(base / "ledger.sqlite")
    # The kernel spec runs "python", which jupyter_client maps to this interpreter;
    # put its bin directory first anyway, for anything else the kernel starts.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("JUPYTER_TOKEN", None)
    env.pop("MPLBACKEND", None)  # the tests' off-screen backend would hide the notebooks' plots
    return env


def start_lab(base: Path, startup_timeout: float = 60.0) -> LabServer:
    """:func:`_start_lab` on a free port; a new port if another process took it first (5 tries)."""
    for attempt in range(5):
        try:
            return _start_lab(base / f"try-{attempt}", startup_timeout)
        except RuntimeError as exc:
            message = str(exc).lower()
            if attempt == 4 or not ("already in use" in message or "available port" in message):
                raise
    raise AssertionError("unreachable")


def _start_lab(base: Path, startup_timeout: float) -> LabServer:
    """Start JupyterLab on 127.0.0.1 serving copies of the notebooks; wait until it answers.

    Raises:
        RuntimeError: the server exited or did not answer ``/api/status`` in time.
    """
    root_dir = base / "notebooks"
    copy_notebooks(NOTEBOOKS, root_dir)
    env = isolated_env(base)
    port = free_port()
    token = secrets.token_hex(24)
    log_path = base / "jupyterlab.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root_dir,
            start_new_session=True,
        )
    server = LabServer(process, port, token, root_dir, Path(env["JUPYTER_RUNTIME_DIR"]), log_path)
    deadline = time.monotonic() + startup_timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"JupyterLab exited with code {process.returncode} while starting:\n{server.log()}"
            )
        try:
            server.get_json("api/status", timeout=2.0)
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                stop_lab(server)
                raise RuntimeError(
                    f"JupyterLab did not answer /api/status within {startup_timeout:.0f} s:\n"
                    f"{server.log()}"
                ) from None
            time.sleep(0.25)
        else:
            return server


def kernel_pids(runtime_dir: Path) -> list[int]:
    """Processes whose command line names a connection file in ``runtime_dir``.

    Those are the kernels this server started (jupyter_client starts them in a
    session of their own, so they are not in the server's process group).
    """
    marker = str(runtime_dir).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline and b"kernel" in cmdline:
            pids.append(int(entry.name))
    return pids


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if _running(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _running(pid)]
    return alive


def stop_lab(server: LabServer, timeout: float = 20.0) -> None:
    """Stop the server and every kernel it started.

    SIGTERM makes jupyter_server shut its kernels down and exit; whatever is
    still there after ``timeout`` seconds is killed, by process id.
    """
    kernels = kernel_pids(server.runtime_dir)
    process = server.process
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    for pid in _wait_gone(kernels + kernel_pids(server.runtime_dir), timeout=10):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
