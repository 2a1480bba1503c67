"""keyless: contract tests for LLM agent gateways.

The `keyless` command is the product (the wheel puts it on PATH); this package only carries the
pytest plugin (`keyless.pytest_plugin`, loaded by pytest through the `pytest11` entry point), so
`pip install keyless pytest` is all a Python project installs. See docs/test-runners.md.
"""
