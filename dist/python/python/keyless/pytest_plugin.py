"""The `keyless` pytest plugin: a replayed gateway for every test that asks for one.

pytest loads it through the wheel's `pytest11` entry point. It gives:

- the `keyless` fixture: `keyless serve` (or `keyless model-server`, `--keyless-server=model`,
  for a gateway the test starts itself) from the `keyless.toml` it finds, started once per
  session and per pytest-xdist worker (each on free ports of its own), stopped with SIGTERM at
  the end. Before each test that uses it the model server is reset to the test's fixture; after
  it the model server's state is read, and the test fails at teardown with keyless's diagnostic
  when a model call missed (or met another model-side problem) or a recorded turn went unused.
- the marker `@pytest.mark.keyless("scenario.mode")`: the fixture a test replays (default: the
  first fixture of the folder, the one `keyless serve` makes active).
- `--keyless-record`: record instead (`keyless record --serve`, one per test, the key from the
  environment variable keyless.toml's `[record] key_env` names); the fixture is built when the
  test ends.

The JSON line `keyless serve` prints once its gateway is ready, the lines `keyless model-server`
prints, the reset token and the `/_keyless/reset` and `/_keyless/state` routes are described in
docs/testing-your-own-gateway.md; this module uses only those.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

CONFIG_NAME = "keyless.toml"
RESET_TOKEN_HEADER = "x-keyless-reset-token"
# How long the command may take to print its address: the gateway's own start is bounded by
# keyless.toml's ready_timeout_secs, which keyless enforces (exit 1 naming it) before this.
START_TIMEOUT_SECS = 300.0
# How long `keyless` may take to stop its gateway and print its summary after SIGTERM (it sends
# SIGKILL to the gateway after five seconds).
STOP_TIMEOUT_SECS = 30.0
HTTP_TIMEOUT_SECS = 30.0


# What `keyless serve` printed when it exited non-zero at the end of the session.
_SUMMARY = pytest.StashKey[str]()


class KeylessError(Exception):
    """keyless could not be started, reset or read; the message says what and why."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("keyless", "keyless: replayed model runs through your gateway")
    group.addoption(
        "--keyless-config",
        metavar="FILE",
        default=None,
        help="the keyless.toml to use (default: keyless.toml in the current folder or the "
        "nearest folder above it, else in pytest's rootdir)",
    )
    group.addoption(
        "--keyless-record",
        action="store_true",
        default=False,
        help="record each test's fixture through the real model (keyless record --serve, the "
        "key from the environment) instead of replaying it; replaces an existing fixture",
    )
    group.addoption(
        "--keyless-server",
        choices=("serve", "model"),
        default=None,
        help="serve: keyless serve starts the gateway keyless.toml names (default); model: "
        "keyless model-server only, for a gateway the test starts itself "
        "(keyless.model_base_url)",
    )
    group.addoption(
        "--keyless-bin",
        metavar="PATH",
        default=None,
        help="the keyless command (default: the one installed beside this Python, else on PATH)",
    )
    parser.addini("keyless_server", "serve (default) or model, as --keyless-server", default="serve")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "keyless(fixture): the keyless fixture (scenario.mode, e.g. word_count.flash) this "
        "test replays through the `keyless` fixture",
    )


class Keyless:
    """What a test gets from the `keyless` fixture.

    gateway_url     the replayed gateway (None with --keyless-server=model: start your own,
                    its model at model_base_url)
    model_base_url  the model server's OpenAI base URL (`http://127.0.0.1:<port>/v1`)
    model_server_url the model server's root (the Messages wire's clients append /v1/messages)
    fixture         the stem of the fixture this test replays (or records), e.g.
                    `word_count.flash`
    worker          the pytest-xdist worker (`gw0`, …) or `main`
    """

    def __init__(
        self,
        gateway_url: Optional[str],
        model_base_url: str,
        model_server_url: str,
        fixture: str,
        worker: str,
    ) -> None:
        self.gateway_url = gateway_url
        self.model_base_url = model_base_url
        self.model_server_url = model_server_url
        self.fixture = fixture
        self.worker = worker

    def __repr__(self) -> str:  # never the reset token
        return (
            f"Keyless(gateway_url={self.gateway_url!r}, model_base_url={self.model_base_url!r}, "
            f"fixture={self.fixture!r}, worker={self.worker!r})"
        )


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return workerinput["workerid"] if workerinput else "main"


def _find_config(config: pytest.Config) -> Path:
    given = config.getoption("--keyless-config")
    if given:
        path = Path(given)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        if not path.is_file():
            raise KeylessError(f"--keyless-config {given}: no such file")
        return path.resolve()
    start = Path(config.invocation_params.dir).resolve()
    for folder in [start, *start.parents, Path(config.rootpath)]:
        if (folder / CONFIG_NAME).is_file():
            return (folder / CONFIG_NAME).resolve()
    raise KeylessError(
        f"no {CONFIG_NAME} in {start} or a folder above it, nor in pytest's rootdir "
        f"{config.rootpath} (keyless init writes one; --keyless-config names another)"
    )


def _keyless_bin(config: pytest.Config) -> str:
    given = config.getoption("--keyless-bin")
    if given:
        return str(Path(given).resolve())
    name = "keyless.exe" if sys.platform == "win32" else "keyless"
    beside = Path(sysconfig.get_path("scripts")) / name
    if beside.is_file():
        return str(beside)
    found = shutil.which("keyless")
    if found:
        return found
    raise KeylessError("no keyless command beside this Python or on PATH (pip install keyless)")


def _logs_folder(config_file: Path, worker: str) -> Path:
    """`<logs>/pytest-<worker>`: keyless.toml's `logs` (when this Python can read TOML), else
    `.keyless/logs`, with one folder per worker, since each worker's gateway writes its own log."""
    logs = ".keyless/logs"
    try:
        import tomllib  # Python 3.11+

        with open(config_file, "rb") as file:
            logs = tomllib.load(file).get("logs", logs)
    except (ImportError, OSError, ValueError):
        pass
    return (config_file.parent / logs / f"pytest-{worker}").resolve()


class _Process:
    """A `keyless` command: stdout read line by line on a thread, stderr kept in a file."""

    def __init__(self, argv: List[str], cwd: Path, work: Path, label: str) -> None:
        self.argv = argv
        self.label = label
        self.stderr_path = work / f"{label}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        # Not a session of its own: Ctrl-C in the terminal reaches keyless too, which stops its
        # gateway's process group before it exits.
        self.process = subprocess.Popen(
            argv,
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.lines.put(None)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text("utf-8", "replace").strip()

    def next_line(self, deadline: float) -> Optional[str]:
        """The next stdout line, or None once stdout closed (the process exited)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise KeylessError(
                f"{self.label}: nothing printed within {START_TIMEOUT_SECS:.0f} s "
                f"({' '.join(self.argv)})\n{self.stderr()}"
            )
        try:
            return self.lines.get(timeout=remaining)
        except queue.Empty:
            return self.next_line(deadline)

    def exited(self, printed: str) -> KeylessError:
        status = self.process.wait()
        return KeylessError(
            f"{self.label} exited {status} before it was ready ({' '.join(self.argv)})"
            f"{printed}\n{self.stderr()}"
        )

    def stop(self) -> int:
        """SIGTERM, as keyless expects; SIGKILL only if it has not stopped in time."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        return self.process.returncode


def _start(argv: List[str], cwd: Path, work: Path, label: str, parse) -> "tuple[_Process, Any]":
    process = _Process(argv, cwd, work, label)
    deadline = time.monotonic() + START_TIMEOUT_SECS
    printed: List[str] = []
    while True:
        line = process.next_line(deadline)
        if line is None:
            shown = "".join(f"\n  stdout: {p}" for p in printed)
            raise process.exited(shown)
        printed.append(line)
        found = parse(printed)
        if found is not None:
            return process, found


def _json_line(printed: List[str]) -> Optional[Dict[str, Any]]:
    try:
        value = json.loads(printed[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) and "model_base_url" in value else None


def _model_server_lines(printed: List[str]) -> Optional[Dict[str, Any]]:
    """`keyless model-server`'s lines: `model server on URL (…)`, `OpenAI base URL for the
    gateway: URL`, …, `reset token (…): TOKEN` (the last one printed at start)."""
    found: Dict[str, Any] = {}
    for line in printed:
        if line.startswith("model server on "):
            found["model_server_url"] = line[len("model server on ") :].split(" ", 1)[0]
        elif line.startswith("OpenAI base URL for the gateway: "):
            found["model_base_url"] = line.split(": ", 1)[1].strip()
        elif line.startswith("reset token ("):
            found["reset_token"] = line.rsplit(": ", 1)[1].strip()
    return found if len(found) == 3 else None


def _http(method: str, url: str, token: str, body: Optional[dict] = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header(RESET_TOKEN_HEADER, token)
    if data is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECS) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")
        raise KeylessError(f"{method} {url}: {error.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as error:
        raise KeylessError(f"{method} {url}: {error}") from None


class _Server:
    """One served gateway (or model server) of this session and worker."""

    def __init__(self, process: _Process, info: Dict[str, Any], worker: str) -> None:
        self.process = process
        self.info = info
        self.worker = worker
        self.token: str = info["reset_token"]
        # Whether a test already failed on a model-side problem (its report has the diagnostic).
        self.reported = False

    def reset(self, fixture: Optional[str]) -> "tuple[str, List[str]]":
        """Selects `fixture` (None: the first served) afresh; returns its name and the problems
        the reset discarded that no read had seen (they count against the test that starts)."""
        name = fixture or self.info.get("fixture")
        body = {"fixture": name} if name else {}
        try:
            reply = _http("POST", f"{self.info['model_server_url']}/_keyless/reset", self.token, body)
        except KeylessError as error:
            raise KeylessError(f"keyless: cannot select the fixture {name!r}: {error}") from None
        discarded = [p.get("message", json.dumps(p)) for p in (reply or {}).get("discarded") or []]
        if name is None:
            name = self.state().get("fixture") or ""
        return name, discarded

    def state(self) -> Dict[str, Any]:
        return _http("GET", f"{self.info['model_server_url']}/_keyless/state", self.token)


def _served_summary(label: str, status: int, stderr: str) -> str:
    return f"keyless: {label} exited {status} after SIGTERM\n{stderr}"


@pytest.fixture(scope="session")
def _keyless_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The session's (and worker's) `keyless serve` or `keyless model-server`."""
    config = request.config
    if config.getoption("--keyless-record"):
        yield None
        return
    worker = _worker(config)
    kind = config.getoption("--keyless-server") or config.getini("keyless_server") or "serve"
    try:
        config_file = _find_config(config)
        binary = _keyless_bin(config)
    except KeylessError as error:
        pytest.fail(str(error), pytrace=False)
    work = tmp_path_factory.mktemp(f"keyless-{worker}")
    common = ["--config", str(config_file)]
    try:
        if kind == "model":
            token_file = work / "reset-token"
            argv = [binary, "model-server", *common, "--port", "0", "--reset-token-file", str(token_file)]
            process, info = _start(argv, config_file.parent, work, "keyless model-server", _model_server_lines)
            info["gateway_url"] = None
        else:
            logs = _logs_folder(config_file, worker)
            argv = [binary, "serve", *common, "--port", "0", "--logs", str(logs)]
            process, info = _start(argv, config_file.parent, work, "keyless serve", _json_line)
    except KeylessError as error:
        pytest.fail(str(error), pytrace=False)
    server = _Server(process, info, worker)
    yield server
    status = process.stop()
    if status != 0 and not server.reported:
        # No test failed on a model-side problem, yet keyless saw one (a gateway that exited on
        # its own, no model call at all): its summary goes in the terminal summary.
        config.stash[_SUMMARY] = _served_summary(process.label, status, process.stderr())


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    summary = config.stash.get(_SUMMARY, None)
    if summary:
        terminalreporter.section("keyless")
        terminalreporter.write_line(summary)


def _marker_fixture(request: pytest.FixtureRequest) -> Optional[str]:
    marker = request.node.get_closest_marker("keyless")
    if marker is None:
        return None
    if len(marker.args) != 1 or not isinstance(marker.args[0], str) or marker.kwargs:
        pytest.fail(
            '@pytest.mark.keyless takes one fixture name, e.g. @pytest.mark.keyless("word_count.flash")',
            pytrace=False,
        )
    name = marker.args[0]
    return name[: -len(".json")] if name.endswith(".json") else name


def _problems_report(fixture: str, state: Dict[str, Any], discarded: List[str]) -> Optional[str]:
    parts: List[str] = []
    for message in discarded:
        parts.append(f"before this test (discarded at its reset): {message}")
    for problem in state.get("problems") or []:
        kind = problem.get("kind", "problem")
        parts.append(f"{kind}: {problem.get('message', json.dumps(problem))}")
    unused = state.get("unused_turns") or []
    if unused:
        turns = ", ".join(str(turn) for turn in unused)
        parts.append(
            f"recorded turn(s) {turns} of {fixture} went unused: the gateway made fewer model "
            f"calls than the recording ({state.get('served_calls', 0)} served)"
        )
    if not parts:
        return None
    # The first line is what pytest's short summary shows: what went wrong, counted.
    kinds = sorted({str(p.get("kind", "problem")) for p in state.get("problems") or []})
    counts = []
    if state.get("problems") or discarded:
        count = len(state.get("problems") or []) + len(discarded)
        counts.append(f"{count} model-side problem(s)" + (f" ({', '.join(kinds)})" if kinds else ""))
    if unused:
        counts.append(f"{len(unused)} recorded turn(s) unused")
    return (
        f"keyless: {fixture}: {', '.join(counts)}; the model side did not go as recorded:\n\n"
        + "\n\n".join(parts)
    )


@pytest.fixture
def keyless(request: pytest.FixtureRequest, tmp_path: Path):
    """A replayed gateway for this test; fails it at teardown on a miss or an unused turn."""
    if request.config.getoption("--keyless-record"):
        yield from _recording(request, tmp_path)
        return
    server: _Server = request.getfixturevalue("_keyless_server")
    wanted = _marker_fixture(request)
    try:
        fixture, discarded = server.reset(wanted)
    except KeylessError as error:
        pytest.fail(str(error), pytrace=False)
    info = server.info
    request.node.user_properties.append(("keyless_worker", server.worker))
    request.node.user_properties.append(("keyless_gateway_url", info.get("gateway_url") or ""))
    request.node.user_properties.append(("keyless_model_server_url", info["model_server_url"]))
    yield Keyless(info.get("gateway_url"), info["model_base_url"], info["model_server_url"], fixture, server.worker)
    try:
        state = server.state()
    except KeylessError as error:
        pytest.fail(f"keyless: cannot read the model server's state: {error}", pytrace=False)
    report = _problems_report(fixture, state, discarded)
    if report is not None:
        server.reported = True
        log = info.get("gateway_log")
        if log:
            report += f"\n\ngateway log: {log}"
        pytest.fail(report, pytrace=False)


def _recording(request: pytest.FixtureRequest, tmp_path: Path):
    """`keyless record --serve` for this one test: the fixture is built when it ends."""
    wanted = _marker_fixture(request)
    if not wanted or "." not in wanted:
        pytest.fail(
            '--keyless-record needs @pytest.mark.keyless("scenario.mode") on the test: it names '
            "the fixture to record",
            pytrace=False,
        )
    scenario, mode = wanted.rsplit(".", 1)
    worker = _worker(request.config)
    try:
        config_file = _find_config(request.config)
        binary = _keyless_bin(request.config)
        argv = [
            binary, "record", "--serve", "--config", str(config_file), "--scenario", scenario,
            "--mode", mode, "--force", "--logs", str(_logs_folder(config_file, worker)),
        ]
        process, info = _start(argv, config_file.parent, tmp_path, "keyless record --serve", _json_line)
    except KeylessError as error:
        pytest.fail(str(error), pytrace=False)
    request.node.user_properties.append(("keyless_worker", worker))
    request.node.user_properties.append(("keyless_gateway_url", info["gateway_url"]))
    model_server_url = info["model_base_url"].rsplit("/v1", 1)[0]
    try:
        yield Keyless(info["gateway_url"], info["model_base_url"], model_server_url, wanted, worker)
    finally:
        status = process.stop()
    if status != 0:
        pytest.fail(f"keyless: recording {wanted} failed:\n{_served_summary(process.label, status, process.stderr())}", pytrace=False)
