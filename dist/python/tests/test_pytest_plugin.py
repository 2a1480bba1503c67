"""The wheel's pytest plugin, run by pytest itself (pytester, each run a subprocess that loads the
plugin through the installed wheel's `pytest11` entry point) on copies of the Python example:
what a test gets, what fails it and how, the model-server mode and recording.

`dist/check-installs.sh` runs it in the venv where the built wheel, pytest, pytest-xdist and the
example's requirements are installed:

    python -m pytest -p pytester dist/python/tests
"""

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python-gateway"
PROMPT = "How many words are in 'the quick brown fox'?"
FOLLOWUP = "And how many in 'hello world'?"


@pytest.fixture
def example(pytester, monkeypatch):
    """A copy of the example (its keyless.toml, fixture, gateway and client), as the folder
    pytest runs in; the gateway runs on this Python."""
    for name in ["keyless.toml", "gateway.py", "scripted_upstream.py", "fixtures", "golden"]:
        source = EXAMPLE / name
        if source.is_dir():
            shutil.copytree(source, pytester.path / name)
        else:
            shutil.copy(source, pytester.path / name)
    shutil.copy(EXAMPLE / "tests" / "client.py", pytester.path / "client.py")
    monkeypatch.setenv("PYTHON", sys.executable)
    monkeypatch.delenv("GATEWAY_SEND_NAMES", raising=False)
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_test_gets_the_served_gateway_and_its_fixture(example):
    example.makepyfile(test_it=f"""
        import pytest
        from client import Gateway

        @pytest.mark.keyless("word_count.flash")
        def test_it(keyless):
            assert keyless.fixture == "word_count.flash"
            assert keyless.model_base_url.endswith("/v1")
            assert keyless.worker == "main"
            gateway = Gateway(keyless.gateway_url)
            thread = gateway.new_thread()
            gateway.run(thread, {PROMPT!r})
            gateway.run(thread, {FOLLOWUP!r})

        def test_without_a_marker_the_first_fixture(keyless):
            assert keyless.fixture == "word_count.flash"
            gateway = Gateway(keyless.gateway_url)
            thread = gateway.new_thread()
            gateway.run(thread, {PROMPT!r})
            gateway.run(thread, {FOLLOWUP!r})
        """)
    result = run(example)
    result.assert_outcomes(passed=2)


def test_recorded_turns_left_unused_fail_the_test_naming_them(example):
    example.makepyfile(test_half=f"""
        import pytest
        from client import Gateway

        @pytest.mark.keyless("word_count.flash")
        def test_only_the_first_question(keyless):
            gateway = Gateway(keyless.gateway_url)
            gateway.run(gateway.new_thread(), {PROMPT!r})
        """)
    result = run(example)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_only_the_first_question*",
        "*recorded turn(s) 2, 3 of word_count.flash went unused*",
    ])


def test_an_unknown_fixture_in_the_marker_fails_the_test_naming_it(example):
    example.makepyfile(test_unknown="""
        import pytest

        @pytest.mark.keyless("nope.flash")
        def test_it(keyless):
            pass
        """)
    result = run(example)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cannot select the fixture 'nope.flash'*"])


def test_no_keyless_toml_is_an_error_naming_the_option(pytester):
    pytester.makepyfile(test_it="def test_it(keyless): pass")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no keyless.toml in *--keyless-config names another*"])


def test_model_server_mode_serves_a_gateway_the_test_starts(example):
    example.makepyfile(test_own=f"""
        import os, subprocess, sys, time, urllib.request
        import pytest
        from client import Gateway

        @pytest.mark.keyless("word_count.flash")
        def test_own_gateway(keyless):
            assert keyless.gateway_url is None
            port = {free_port()}
            env = dict(os.environ, KEYLESS_MODEL_BASE_URL=keyless.model_base_url,
                       KEYLESS_GATEWAY_PORT=str(port))
            gateway = subprocess.Popen([sys.executable, "gateway.py"], env=env)
            try:
                for _ in range(100):
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{{port}}/health", timeout=1)
                        break
                    except OSError:
                        time.sleep(0.1)
                client = Gateway(f"http://127.0.0.1:{{port}}")
                thread = client.new_thread()
                client.run(thread, {PROMPT!r})
                messages = client.run(thread, {FOLLOWUP!r})
                assert messages[-1]["content"] == "It has 2 words."
            finally:
                gateway.terminate()
                gateway.wait()
        """)
    result = run(example, "--keyless-server", "model")
    result.assert_outcomes(passed=1)


def test_keyless_record_builds_the_fixture_that_then_replays(example, monkeypatch):
    port = free_port()
    upstream = subprocess.Popen([sys.executable, "scripted_upstream.py", "--port", str(port)],
                                cwd=example.path)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        config = (example.path / "keyless.toml").read_text()
        config = config.replace('upstream = "https://api.openai.com/v1"', f'upstream = "http://127.0.0.1:{port}/v1"')
        (example.path / "keyless.toml").write_text(config)
        fixture = example.path / "fixtures" / "word_count.flash.json"
        fixture.unlink()
        example.makepyfile(test_rec=f"""
            import pytest
            from client import Gateway

            @pytest.mark.keyless("word_count.flash")
            def test_it(keyless):
                gateway = Gateway(keyless.gateway_url)
                thread = gateway.new_thread()
                gateway.run(thread, {PROMPT!r})
                assert gateway.run(thread, {FOLLOWUP!r})[-1]["content"] == "It has 2 words."
            """)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        recorded = run(example, "--keyless-record")
        recorded.assert_outcomes(passed=1)
        assert fixture.is_file(), recorded.stdout.str()
    finally:
        upstream.terminate()
        upstream.wait()
    # The recording replays, the upstream gone.
    run(example).assert_outcomes(passed=1)
