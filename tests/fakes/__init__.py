"""Fake servers for tests: real HTTP on 127.0.0.1, real wire formats, scripted.

``fakes.anthropic_server.FakeAnthropic`` (Anthropic Messages) and
``fakes.openai_server.FakeOpenAI`` (OpenAI-compatible chat completions) are
driven by a ``fakes.script.Script`` and record every request they receive.
Put ``tests/`` on ``sys.path`` to import them.
"""
