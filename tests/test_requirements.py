"""The rule for what a test needs from outside the repository (conftest.require): skip when it
is missing, fail instead under CI; the ``needs_*`` markers follow the same rule."""

from __future__ import annotations

import re

import pytest

import conftest
from conftest import NEEDS, in_ci, require, require_marked

MISSING = "needs the thing: it comes from elsewhere"


@pytest.mark.parametrize("value", [None, "", "0", "false", "no"])
def test_not_in_ci(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not in_ci()


@pytest.mark.parametrize("value", ["true", "1", "yes", "True"])
def test_in_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci()


def test_missing_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=MISSING):
        require("the thing", False, "it comes from elsewhere")


def test_missing_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=MISSING) as failed:
        require("the thing", False, "it comes from elsewhere")
    assert "CI is set" in str(failed.value)


@pytest.mark.parametrize("ci", [None, "true"])
def test_present_passes(monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    require("the thing", True, "it comes from elsewhere")  # neither skips nor fails


@pytest.mark.parametrize("marker", sorted(NEEDS))
def test_a_marked_test_skips_or_fails_before_it_runs(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, marker: str
) -> None:
    """The setup hook reads the marker and applies ``require`` with its check."""
    what, _, reason = NEEDS[marker]
    monkeypatch.setitem(NEEDS, marker, (what, lambda: False, reason))
    request.node.add_marker(marker)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=re.escape(f"needs {what}: {reason}")):
        conftest.pytest_runtest_setup(request.node)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=re.escape(f"needs {what}: {reason}")):
        conftest.pytest_runtest_setup(request.node)
    monkeypatch.setitem(NEEDS, marker, (what, lambda: True, reason))
    conftest.pytest_runtest_setup(request.node)
    require_marked(["not_a_needs_marker"])  # other markers are no requirement


def test_every_needs_marker_is_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(NEEDS) <= registered
    assert {"slow", "subprocess", "soak", "remote"} <= registered
