"""What the three API adapters share: keys from the environment, PNG encoding, and one
mapping of SDK failures onto TransientModelError / PermanentModelError (counterfactual paper §3.10,
the paired-modality paper Appendix A: "each request was retried on HTTP 429/5xx errors").

The adapters let the SDKs retry nothing (``max_retries=0``): the sweep retries with one
jittered backoff shared by every provider, and counts attempts itself.
"""

from __future__ import annotations

import base64
import email.utils
import json
import os
import re
import time

from medscope.errors import MedScopeError
from medscope.models.base import Message, PermanentModelError, TransientModelError

# 408 request timeout, 409 conflict (OpenAI "try again"), 425 too early, 429 rate limit;
# every 5xx (529 is Anthropic "overloaded").
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def api_key(env_name: str | None, model_name: str) -> str:
    """The key from the environment variable ``env_name`` (never from a config value).

    Parameters
    ----------
    env_name : str or None
        Name of the environment variable (the model entry's ``api_key_env``).
    model_name : str
        The model's name, for the error message.

    Returns
    -------
    str
        The key.

    Raises
    ------
    MedScopeError
        If ``env_name`` is empty or the variable is unset or empty.
    """
    if not env_name:
        raise MedScopeError(f"model {model_name}: set api_key_env to the name of the variable holding its key")
    value = os.environ.get(env_name)
    if not value:
        raise MedScopeError(f"model {model_name}: environment variable {env_name} is not set")
    why = key_value_problem(value)
    if why:
        raise MedScopeError(f"model {model_name}: environment variable {env_name} {why}")
    return value


def key_value_problem(value: str) -> str | None:
    """Why a key's value cannot be sent as an HTTP header, or None; the reason never quotes the key.

    A key read with its Windows line end (``KEY=$(cat key.txt)`` of a CRLF file), or pasted with
    smart quotes from a document, is no key the provider issued. Sent, the first made the HTTP
    client's error quote the whole header, key included (issue 51, ninth campaign); the second
    failed as ``ordinal not in range(256)``, naming nothing. Keys are printable ASCII.

    Parameters
    ----------
    value : str
        The environment variable's value.

    Returns
    -------
    str or None
        What is wrong and where (the character's position and, outside ASCII, its code point),
        phrased to follow "environment variable NAME"; None for a printable ASCII value.
    """
    if value != value.strip():
        return "starts or ends with white space or a line end (\\r\\n?): set it to the key alone"
    for i, ch in enumerate(value):
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return f"holds a control character (U+{ord(ch):04X}) at position {i + 1}: set it to the key alone"
        if ord(ch) > 0x7E:
            return (f"holds a character outside ASCII (U+{ord(ch):04X}) at position {i + 1}, which no issued key "
                    "has (a smart quote pasted from a document?): set it to the key alone")
    return None


def b64png(png: bytes) -> str:
    """PNG bytes as base64 text, for a JSON request body.

    Parameters
    ----------
    png : bytes
        The image.

    Returns
    -------
    str
        ASCII base64.
    """
    return base64.b64encode(png).decode("ascii")


def image_count(messages: list[Message]) -> int:
    """The number of image parts across ``messages``.

    Parameters
    ----------
    messages : list of Message
        The conversation.

    Returns
    -------
    int
        Image parts in all messages.
    """
    return sum(1 for m in messages for p in m.parts if p.is_image)


def split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """Anthropic and Gemini take the system prompt beside the turns, not as a turn.

    Parameters
    ----------
    messages : list of Message
        The conversation, system turns anywhere in it.

    Returns
    -------
    system : str or None
        The system turns' text joined by blank lines; None when there is none.
    turns : list of Message
        The other messages, in order.
    """
    system = "\n\n".join(m.joined_text for m in messages if m.role == "system") or None
    return system, [m for m in messages if m.role != "system"]


def retry_after_s(headers) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (delta seconds or an HTTP date).

    Parameters
    ----------
    headers : mapping or None
        Response headers (case-insensitive lookup expected, as the SDKs' are).

    Returns
    -------
    float or None
        Seconds to wait, at least 0; None when there is no header or it cannot be read.
    """
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


# addition: keys shorter than this are never scrubbed out of text: replacing a short
# key ("x", "test") would cut it out of ordinary words ("e[redacted]tending"); keys travel in
# headers only, and the sweep warns about a short one instead (``short_secret_warning``).
MIN_SCRUB_LEN = 8
_KEY_CHARS = "A-Za-z0-9_\\-"  # what a key is made of: an occurrence must not touch more of them


def scrub(text: str, secret: str | None) -> str:
    """Second line of defence (keys never enter episode text, they live in headers): replace
    whole occurrences of a key of at least MIN_SCRUB_LEN characters (an echoing proxy, a bad SDK)
    with ``[redacted]``; a shorter key, or one inside a longer token, leaves the text as it is.

    Parameters
    ----------
    text : str
        Text that may echo the key.
    secret : str or None
        The API key.

    Returns
    -------
    str
        ``text`` with the key's whole occurrences replaced by ``[redacted]``.
    """
    if not secret or len(secret) < MIN_SCRUB_LEN or secret not in text:
        return text
    return re.sub(rf"(?<![{_KEY_CHARS}]){re.escape(secret)}(?![{_KEY_CHARS}])", "[redacted]", text)


def short_secret_warning(env_name: str, secret: str) -> str | None:
    """The warning for a key too short to scrub (never the key itself), or None.

    Parameters
    ----------
    env_name : str
        The key's environment variable, named in the warning.
    secret : str
        The key; only its length is read.

    Returns
    -------
    str or None
        The warning line, or None for a key of at least MIN_SCRUB_LEN characters.
    """
    if len(secret) >= MIN_SCRUB_LEN:
        return None
    return (f"medscope: warning: the key in ${env_name} is {len(secret)} character(s), shorter than "
            f"{MIN_SCRUB_LEN}: it is sent only in request headers and is not scrubbed from replies "
            "(that would cut it out of ordinary words); use a real key where it matters")


def classify(err: BaseException, secret: str | None = None) -> Exception:
    """Map an SDK / transport failure to TransientModelError or PermanentModelError.

    Works by duck typing (status code, response headers, class names) so one rule serves the
    OpenAI, Anthropic and Gemini SDKs and their shared HTTP stack.

    Parameters
    ----------
    err : BaseException
        The failure an SDK or transport raised.
    secret : str or None, optional
        The API key, scrubbed from the message.

    Returns
    -------
    Exception
        ``err`` itself when already a model error; else a TransientModelError (HTTP 408, 409, 425, 429,
        5xx with its Retry-After; timeouts, connection failures, bad or too deeply nested JSON) or a
        PermanentModelError
        (anything else), its message at most 500 characters.

    References
    ----------
    .. [1] Counterfactual paper, §3.10.
    .. [2] Paired-modality paper, Appendix A.
    """
    if isinstance(err, (TransientModelError, PermanentModelError)):
        return err
    status = getattr(err, "status_code", None)
    if status is None and isinstance(getattr(err, "code", None), int):
        status = err.code  # google-genai APIError
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    message = scrub(f"{type(err).__name__}: {err}", secret)[:500]
    if isinstance(status, int) and 300 <= status < 400:
        # never followed (http_client): a redirect would carry the images, the prompt and the key
        # to a host the private allow-list never named (issue 51)
        where = scrub(str(getattr(headers, "get", lambda k: None)("location") or "?"), secret)[:200]
        return PermanentModelError(
            f"HTTP {status}: the endpoint redirected to {where}; redirects are not followed (the request and "
            f"its key go only to base_url): set base_url to the address that answers")
    if isinstance(status, int) and status >= 400:
        if status in TRANSIENT_STATUS or status >= 500:
            return TransientModelError(f"HTTP {status}: {message}", retry_after_s=retry_after_s(headers))
        return PermanentModelError(f"HTTP {status}: {message}")
    if isinstance(err, RecursionError):
        # a body nested too deep to parse is as malformed as one cut short: retried like it, where a
        # permanent failure was never sent again (issue 51, the tenth campaign)
        return TransientModelError(f"malformed response: body nested too deep to parse ({message[:200]})")
    names = {c.__name__ for c in type(err).__mro__}
    # Timeouts, refused / reset connections, bodies cut short or not JSON: the server may
    # answer properly next time.
    if names & {
        "APITimeoutError", "APIConnectionError", "TimeoutException", "TransportError", "NetworkError",
        "RemoteProtocolError", "ConnectionError", "TimeoutError", "JSONDecodeError",
        "APIResponseValidationError", "IncompleteRead", "UnknownApiResponseError",
    }:
        return TransientModelError(message)
    if isinstance(err, (ValueError, KeyError, TypeError)) and ("JSON" in str(err) or "json" in str(err)):
        return TransientModelError(message)
    return PermanentModelError(message)


def malformed(what: str, payload: object = None) -> TransientModelError:
    """A 200 whose body lacks what every valid answer has: retry, it was cut or garbled.

    Parameters
    ----------
    what : str
        What the body lacks.
    payload : object, optional
        The body, JSON-dumped into the message (first 200 characters).

    Returns
    -------
    TransientModelError
        The error to raise.
    """
    detail = json.dumps(payload, default=str)[:200] if payload is not None else ""
    return TransientModelError(f"malformed response: {what} {detail}".strip())


def http_client(sdk):
    """The SDK's default httpx2 client over a DeadlineTransport (one request deadline).

    Parameters
    ----------
    sdk : module
        ``openai`` or ``anthropic``: each exports ``DefaultHttpxClient`` (its defaults for
        connection limits; redirects are not followed, so nothing reaches a host other than
        ``base_url``).

    Returns
    -------
    httpx2.Client
        The client to pass as ``http_client``.
    """
    from medscope.models import deadline  # the HTTP stack: only for a client, not for scrub()

    return sdk.DefaultHttpxClient(transport=deadline.DeadlineTransport(), follow_redirects=False)


def send_within_deadline(send, timeout_s: float, secret: str | None = None):
    """Run one SDK request under one deadline of ``timeout_s`` for the whole request.

    The SDK's own ``timeout`` bounds each socket read; the deadline (``medscope.models.deadline``)
    bounds connect, send, headers and the whole body together, so a server that trickles its
    answer one byte at a time fails at ``timeout_s`` instead of holding the worker (issue 51).

    Parameters
    ----------
    send : callable
        No arguments; sends the request and returns the SDK's parsed response.
    timeout_s : float
        The model entry's ``timeout_s``.
    secret : str or None, optional
        The API key, scrubbed from any message.

    Returns
    -------
    object
        What ``send`` returned.

    Raises
    ------
    TransientModelError
        The deadline passed ("no complete answer within the request deadline of N s"), or
        any other transient failure (``classify``).
    PermanentModelError
        A failure that retrying cannot mend.
    """
    from medscope.models import deadline

    with deadline.request_deadline(timeout_s):
        try:
            return send()
        except Exception as err:  # every SDK / transport failure is classified, none escapes raw
            failure = classify(err, secret)
            lookup = deadline.lookup_failure(err)  # the SDKs' own message ("Connection error.") hides it
            if deadline.deadline_passed() and not isinstance(failure, PermanentModelError):
                raise TransientModelError(
                    f"no complete answer within the request deadline of {timeout_s:g} s (timeout_s); "
                    f"{lookup or failure}"[:500]) from None
            if lookup and not isinstance(failure, PermanentModelError):
                raise TransientModelError(f"{lookup}; {failure}"[:500]) from None
            raise failure from None
