"""Pre-flight of a sweep's API models, before any cluster starts.

A key missing from the driver's environment used to be found by the workers after Ray had
started, one ``failed: MedScopeError`` per unit with the reason only inside the rejects; an
endpoint that is down was found the same way, after the retries. Here every API model of the
sweep is checked first, and each failure is one line:

- its key: ``api_key_env`` is set in the models YAML and that variable is set and not empty in
  this environment (the variable is named, never its value);
- its endpoint: one cheap request, the provider's model list (``GET base_url/models`` for
  OpenAI and OpenAI-compatible servers, ``/v1/models`` for Anthropic, ``/v1beta/models`` for
  Gemini, ``/openai/models`` for Azure OpenAI), with a short timeout. The endpoint fails when it
  cannot be reached or does not answer in time, or when it answers 401 / 403 (the key is
  refused); any other answer (a server without a model list: 404, 405, 501) means it is up.

``medscope eval run --no-preflight`` skips the endpoint request (offline preparation); the keys
are still checked, since no unit can run without them. Models that run here (local weights,
policies) are not checked.
"""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from medscope.errors import MedScopeError
from medscope.io import safe_text
from medscope.models import api_common as common
from medscope.models.config import API_KINDS, ModelEntry

# addition: how long the pre-flight request waits; a provider's model list answers in well under a second
TIMEOUT_S = 5.0
# kind -> (default base URL, the model list's path under it)
MODEL_LIST = {
    "openai": ("https://api.openai.com/v1", "/models"),
    "anthropic": ("https://api.anthropic.com", "/v1/models"),
    "gemini": ("https://generativelanguage.googleapis.com", "/v1beta/models"),
    "azure_openai": (None, "/openai/models"),
}
ANTHROPIC_VERSION = "2023-06-01"  # the header Anthropic's API requires on every request
AZURE_API_VERSION = "2024-12-01-preview"  # the paired-modality paper App. A's; an entry's own api_version wins


@dataclass(frozen=True)
class Failure:
    """One model that cannot run: its name and the one-line reason."""
    model: str
    reason: str

    def line(self) -> str:
        return f"model {self.model}: {self.reason}"


def key_failure(entry: ModelEntry) -> str | None:
    """Why ``entry``'s key is missing, or None when its variable is set.

    Parameters
    ----------
    entry : ModelEntry
        An API model's entry.

    Returns
    -------
    str or None
        The reason, naming the variable (never its value); None when the key is there.
    """
    if not entry.api_key_env:
        return "no api_key_env in the models YAML (the NAME of the variable holding its key)"
    value = os.environ.get(entry.api_key_env)
    if not value:
        return f"environment variable {entry.api_key_env} is not set (export it before the sweep)"
    why = common.key_value_problem(value)
    if why:
        return f"environment variable {entry.api_key_env} {why}"
    return None


def _request(entry: ModelEntry, key: str) -> tuple[str, str, dict]:
    default, path = MODEL_LIST[entry.kind]
    base = (entry.base_url or default or "").rstrip("/")
    if not base:
        raise MedScopeError(f"kind {entry.kind} needs base_url (the endpoint)")
    url = base + path
    headers = {"User-Agent": "medscope-preflight"}
    if entry.kind == "openai":
        headers["Authorization"] = f"Bearer {key}"
    elif entry.kind == "azure_openai":
        headers["api-key"] = key
        url += f"?api-version={entry.settings.api_version or AZURE_API_VERSION}"
    elif entry.kind == "anthropic":
        headers.update({"x-api-key": key, "anthropic-version": entry.settings.anthropic_version or ANTHROPIC_VERSION})
    else:
        headers["x-goog-api-key"] = key
    return base, url, headers


def _without_user(url: str) -> str:
    """``url`` without a ``user:password@`` part (urllib would read it as part of the host)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def endpoint_failure(entry: ModelEntry, timeout_s: float = TIMEOUT_S) -> str | None:
    """Why ``entry``'s endpoint cannot serve the sweep, from one model-list request, or None.

    Parameters
    ----------
    entry : ModelEntry
        An API model's entry whose key is set.
    timeout_s : float, optional
        Seconds to wait for the connection and the answer.

    Returns
    -------
    str or None
        The reason (unreachable, no answer in time, or the key refused with its HTTP status),
        naming the endpoint with any credentials in it redacted; None when it answered.
    """
    try:
        base, url, headers = _request(entry, os.environ.get(entry.api_key_env or "", ""))
    except MedScopeError as err:
        return str(err)
    where = safe_text.redact_url(base)
    late = f"{where} did not answer within {timeout_s:g} s"
    try:
        request = urllib.request.Request(_without_user(url), headers=headers, method="GET")
        with urllib.request.urlopen(request, timeout=timeout_s):
            return None
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            return f"{where} refused the key in {entry.api_key_env} (HTTP {err.code})"
        return None  # it answered: up, whatever it thinks of a model-list request
    except (TimeoutError, socket.timeout):
        return late
    except (urllib.error.URLError, OSError, ValueError) as err:  # refused, reset, no such host, bad URL
        why = getattr(err, "reason", err)
        if isinstance(why, (TimeoutError, socket.timeout)):
            return late
        text = why.strerror if isinstance(why, OSError) and why.strerror else str(why)
        key = os.environ.get(entry.api_key_env or "", "")
        if len(key) >= 8:  # an HTTP client's error may quote the header it refused, key and all
            text = text.replace(key.strip(), "[redacted]").replace(repr(key.strip())[1:-1], "[redacted]")
        return f"{where} is not reachable ({text})"


def check(entries: list[ModelEntry], reach: bool = True, timeout_s: float = TIMEOUT_S) -> list[Failure]:
    """Every model's kind, every API model's key and, with ``reach``, its endpoint; one request per
    distinct (kind, endpoint, key variable).

    Parameters
    ----------
    entries : list of ModelEntry
        The sweep's models; those that run here are skipped.
    reach : bool, optional
        Send the model-list request (False: keys only, for offline use).
    timeout_s : float, optional
        The request's timeout.

    Returns
    -------
    list of Failure
        One per model that cannot run, in the entries' order; empty when all can.
    """
    from medscope.models.registry import MODEL_KINDS

    failures, answered = [], {}
    for entry in entries:
        if entry.kind not in MODEL_KINDS and ":" not in entry.kind:
            # found here, not by every unit's worker after Ray started (issue 51, sixth campaign)
            failures.append(Failure(entry.name, f"unknown kind {entry.kind!r} (one of: {', '.join(sorted(MODEL_KINDS))}; "
                                                "or package.module:Class)"))
            continue
        if entry.kind not in API_KINDS:
            continue
        why = key_failure(entry)
        if why is None and reach:
            at = (entry.kind, entry.base_url, entry.api_key_env, entry.settings.api_version)
            if at not in answered:
                answered[at] = endpoint_failure(entry, timeout_s)
            why = answered[at]
        if why:
            failures.append(Failure(entry.name, why))
    return failures


def require(entries: list[ModelEntry], reach: bool = True, timeout_s: float = TIMEOUT_S) -> None:
    """Raise one error listing every model that cannot run (:func:`check`), before any cluster.

    Parameters
    ----------
    entries : list of ModelEntry
        The sweep's models.
    reach : bool, optional
        Send the model-list request (``--no-preflight``: False).
    timeout_s : float, optional
        The request's timeout.

    Raises
    ------
    MedScopeError
        ``pre-flight failed for N model(s)`` and then one line per model.
    """
    failures = check(entries, reach, timeout_s)
    if failures:
        raise MedScopeError(f"pre-flight failed for {len(failures)} model(s), nothing was sent:\n"
                            + "\n".join("  " + f.line() for f in failures)
                            + ("\n  (offline? --no-preflight skips the endpoint request; keys are always needed)"
                               if reach and any("reach" in f.reason or "answer" in f.reason for f in failures) else ""))
