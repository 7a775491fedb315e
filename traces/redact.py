"""Secret redaction applied at write time, so no secret ever reaches a trace file.

Placeholders are stable: the same secret always becomes the same placeholder within a
redactor, so two redacted lines can still be compared.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

# Every placeholder starts with this (`[REDACTED:api_key]`, `[REDACTED:pattern-1]`, …).
REDACTION_MARK = "[REDACTED:"
SECRET_PLACEHOLDER = "[REDACTED:api_key]"
_AUTH_KEYS = frozenset({"authorization", "proxy-authorization", "api_key", "api-key", "x-api-key"})
# What `json_clean` looks for in the lowered text besides the secrets and their forms.
_AUTH_WORDS = ("authorization", "bearer", "api_key", "api-key")
# The characters, lowered, of JSON numbers, times, true/false/null (NaN and Infinity too)
# and of what separates values, keys and the start of an object.
_SCALAR_CHARACTERS = frozenset("0123456789+-.:,{etz" + "truefalsnl" + "nainfity")
# Bearer tokens and common key shapes, wherever they appear inside text.
_BEARER = re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}")
# Characters JSON serializers write unchanged, so a secret made of them appears verbatim.
_JSON_VERBATIM = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]+")
# Names of headers and query parameters whose values are credentials: `Authorization`,
# `api-key` (Azure OpenAI), `x-api-key` (Anthropic), `x-goog-api-key`, `?key=`, `?sig=`, ….
CREDENTIAL_NAME = re.compile(r"(?i)key|token|secret|passw|auth|credential|cookie|signature|^sig$")
# Shorter values of such names are flags or ids, not keys; redacting them would garble text.
MIN_CREDENTIAL_LENGTH = 8
# Encoded forms of a secret shorter than this are left alone (they could occur by chance).
_MIN_ENCODED_LENGTH = 12


class Redactor:
    def __init__(self, secrets: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        # Base64 and hex forms of the secrets (hex in lower case: it is matched in any case).
        self._encoded: list[str] = []
        self._hex: list[str] = []
        self.generation = 0  # how many secrets were added: streams relearn them when it moves
        self._patterns = [re.compile(p) for p in patterns]
        # Whether every secret is made of characters JSON writes unchanged and there are no
        # custom patterns: then a JSON text shows by itself whether it holds anything to
        # redact (`json_clean`).
        self.verbatim = not self._patterns
        for secret in secrets:
            self.add_secret(secret)

    @property
    def secrets(self) -> list[str]:
        return list(self._secrets)

    @property
    def patterns(self) -> list[re.Pattern[str]]:
        return list(self._patterns)

    def add_secret(self, secret: str | None) -> None:
        """Redact `secret`, and its base64 and hex forms, from now on."""
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self.verbatim = self.verbatim and bool(_JSON_VERBATIM.fullmatch(secret))
            self.generation += 1
            self._encoded += [f for f in base64_forms(secret) if f not in self._encoded]
            if len(secret) * 2 >= _MIN_ENCODED_LENGTH:
                self._hex.append(secret.encode().hex())

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, SECRET_PLACEHOLDER)
        if self._hex or self._encoded:
            value = self._encoded_text(value)
        value = _BEARER.sub("Bearer [REDACTED:authorization]", value)
        for number, pattern in enumerate(self._patterns, start=1):
            value = pattern.sub(f"[REDACTED:pattern-{number}]", value)
        return value

    def json_clean(self, text: str, start: int = 0) -> bool:
        """Whether `text`, a serialized JSON value, holds nothing to redact: redacting its
        values would change nothing. False when it may, and the caller must walk the values
        (`value`). The check reads the text alone: secrets, auth key names and "bearer" are
        made of characters JSON writes verbatim, so a value holding one shows it in the
        text. Custom patterns could match text an escape hides, so any pattern means False.
        Redacting in the text itself is not attempted: next to an escape (`\\n`), inside a
        number or a key it would differ from redacting the values.

        With `start`, only the text from there is read: for a caller that knows nothing
        before it can hold anything to redact (`absent_from`)."""
        if not self.verbatim:
            return False
        if start:
            text = text[start:]
        lowered = text.lower()
        # "authorization" and "api-key" are inside every other name in _AUTH_KEYS, so these
        # scans are enough to know whether an auth-named key may be present.
        if "authorization" in lowered or "bearer" in lowered:
            return False
        if "api_key" in lowered or "api-key" in lowered:
            return False
        # Loops, not `any()` over generators: they cost less, on every event.
        for secret in self._secrets:
            if secret in text:
                return False
        for form in self._encoded:
            if form in text:
                return False
        for form in self._hex:  # noqa: SIM110 (see above)
            if form in lowered:
                return False
        return True

    def absent_from(self, strings: Iterable[str]) -> bool:
        """Whether nothing `json_clean` looks for can occur in the JSON text of an object
        whose keys and string values are `strings` or times (`2026-01-02T03:04:05.678Z`) and
        whose other values are numbers, booleans or null (an event's envelope). What it looks
        for holds no `"`, so it lies inside one string of the text or in what lies between
        two: a look-alike made only of the characters of numbers, times, literals and
        separators could occur anywhere; any other only inside one of `strings`."""
        if not self.verbatim:
            return False
        inside = [text.lower() for text in strings]
        for form in (*_AUTH_WORDS, *self._secrets, *self._encoded, *self._hex):
            lowered = form.lower()
            if set(lowered) <= _SCALAR_CHARACTERS or any(lowered in text for text in inside):
                return False
        return True

    def _encoded_text(self, value: str) -> str:
        """`value` with the secrets' base64 and hex forms (in any case) redacted."""
        for form in self._encoded:
            if form in value:
                value = value.replace(form, SECRET_PLACEHOLDER)
        lowered = value.lower()
        for form in self._hex:
            if form in lowered:
                value = re.sub(form, SECRET_PLACEHOLDER, value, flags=re.IGNORECASE)
                lowered = value.lower()
        return value

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, scalars)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and key.lower() in _AUTH_KEYS and isinstance(item, str):
                    out[key] = "[REDACTED:authorization]"
                else:
                    # A secret can be a key too (tool arguments keyed by token, say).
                    out[self.text(key) if isinstance(key, str) else key] = self.value(item)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value


@functools.lru_cache(maxsize=256)
def base64_forms(secret: str) -> tuple[str, ...]:
    """The base64 forms (standard and URL-safe) of a secret, longest first. Inside
    a longer encoded text (`Basic base64(user:key)`) a secret's base64 depends on where its
    bytes fall in the 3-byte groups, so for each of the three offsets the characters that
    come from the secret's bytes alone are a form too; the few around them are not.
    Kept for the secrets seen last: the proxy learns the same client keys for every run."""
    raw = secret.encode()
    forms: list[str] = []
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode()
        if shift == 0:
            forms.append(encoded)  # the secret encoded by itself, with its padding
        # Characters mixing bits of the bytes before or after the secret are cut.
        start = 4 if shift else 0
        stop = 4 * ((shift + len(raw)) // 3)
        if stop - start >= _MIN_ENCODED_LENGTH:
            forms.append(encoded[start:stop])
    forms += [form.replace("+", "-").replace("/", "_") for form in forms]
    unique = [form for number, form in enumerate(forms) if form not in forms[:number]]
    return tuple(
        sorted((form for form in unique if len(form) >= _MIN_ENCODED_LENGTH), key=len, reverse=True)
    )


def credentials(headers: Mapping[str, str], query: str = "") -> list[str]:
    """The secrets in a request's credential-bearing headers and query parameters (see
    CREDENTIAL_NAME): each value, and the token after an auth scheme (`Bearer`, `Basic`
    and the password inside it, …), cookie values one by one."""
    found: list[str] = []
    pairs = [*headers.items(), *parse_qsl(query, keep_blank_values=True)]
    for name, value in pairs:
        if not CREDENTIAL_NAME.search(name):
            continue
        value = value.strip()
        values = [value]
        scheme, _, token = value.partition(" ")
        if token and scheme.isalpha():
            values.append(token.strip())
            if scheme.lower() == "basic":
                values.append(_basic_password(token.strip()))
        if "cookie" in name.lower():
            values += [part.partition("=")[2].strip() for part in value.split(";")]
        found += [v for v in values if len(v) >= MIN_CREDENTIAL_LENGTH and v not in found]
    return found


def url_credentials(url: str) -> list[str]:
    """The secrets in a URL: its password and credential-bearing query parameters."""
    parts = urlsplit(url)
    found = [unquote(parts.password)] if parts.password else []
    return [*found, *credentials({}, parts.query)]


def _basic_password(token: str) -> str:
    try:
        decoded = base64.b64decode(token, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[2]


T = TypeVar("T")

# Where a streamed chunk carries text: (choice, "content" | "reasoning_content") or
# (choice, "arguments", tool call index).
Channel = tuple[Any, ...]


@functools.lru_cache(maxsize=64)  # a proxy opens a writer for every run, with the same key
def _quick_look(secrets: tuple[str, ...]) -> re.Pattern[str]:
    """What, in a chunk's JSON text, may show a secret or the start of one at the end of a
    text: a secret itself, or a start of one closing a string (a string value is closed by
    `"` then `,`, `}` or `]`; a key by `":`). With secrets made of characters JSON writes
    verbatim, a text that holds one, or ends with the start of one, shows it this way; other
    strings may match too, which only sends the chunk the slow way.

    The secrets are one tree of characters (`s(?:k(?:-…|"[,}\\]])|"[,}\\]])`): at each
    character that begins a secret the search follows one path, instead of trying every
    secret and every start of one in turn (32 µs a chunk with a 52-character key and its
    `Bearer` header; 0.8 µs so). Past its first _TREE_DEPTH characters a secret's tree
    ends: a text holding those shows a secret or a long start of one, as far as this look
    can tell."""
    tree: dict[str, Any] = {}
    for secret in secrets:
        node = tree
        for character in secret[:_TREE_DEPTH]:
            node = node.setdefault(character, {})
        node[_WHOLE] = {}
    return re.compile(_branches(tree))


# In `_quick_look`'s tree: a secret ends here.
_WHOLE = ""
# How deep the tree goes (each character nests a group: a JWT's 1,000 would not compile).
_TREE_DEPTH = 64
# A string closed right after a start of a secret.
_CLOSED = '"[,}\\]]'


def _branches(tree: dict[str, Any]) -> str:
    """The paths down a tree of characters: each character, then (unless a secret ends
    there) one of the paths below it, or the string closed."""
    branches = []
    for character, below in tree.items():
        if character == _WHOLE:
            continue
        rest = "" if _WHOLE in below else f"(?:{_branches(below)}|{_CLOSED})"
        branches.append(re.escape(character) + rest)
    return "|".join(branches)


# The keys of a chunk's text fragments (`_text_pieces`).
_TEXT_KEYS = frozenset({"content", "reasoning_content", "arguments"})


def _in_other_value(text: str, at: int) -> bool:
    """Whether place `at` of a JSON text as pydantic writes it (no spaces) is, for certain,
    inside a string value of a key that is none of `_TEXT_KEYS`: the nearest `"` before it
    opens a string right after `"key":`, that key after `{` or `,`. In a JSON text those
    quotes cannot be inside a string (there they would be escaped), so they are a key and its
    value; `"` written inside the value would be escaped, so it runs on up to `at`."""
    opening = text.rfind('"', 0, at)
    if opening < 2 or text[opening - 2 : opening] != '":':
        return False
    key_opening = text.rfind('"', 0, opening - 2)
    key = text[key_opening + 1 : opening - 2]
    return (
        key_opening > 0
        and text[key_opening - 1] in "{,"
        and "\\" not in key
        and key not in _TEXT_KEYS
    )


def _text_pieces(data: dict[str, Any]) -> list[tuple[Channel, dict[str, Any], str]]:
    """The text fragments of one raw chunk: (channel, the dict holding it, its key)."""
    pieces: list[tuple[Channel, dict[str, Any], str]] = []
    choices = data.get("choices")
    for position, choice in enumerate(choices if isinstance(choices, list) else []):
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            continue
        number = choice.get("index", position)
        for key in ("content", "reasoning_content"):
            if isinstance(delta.get(key), str):
                pieces.append(((number, key), delta, key))
        calls = delta.get("tool_calls")
        for order, call in enumerate(calls if isinstance(calls, list) else []):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                channel = (number, "arguments", call.get("index", order))
                pieces.append((channel, function, "arguments"))
    return pieces


class ChunkStream(Generic[T]):
    """Redaction of a streamed answer as a whole: a secret the model sends back split over
    several chunks is redacted in the chunks as in the assembled text, so the concatenated
    deltas read `[REDACTED:api_key]` exactly where the assembled message does (and a replay
    assembles the placeholder, never the key). The same goes for a configured pattern's
    match (`[REDACTED:pattern-N]`).

    `push` takes each chunk (any item, with its raw data) and returns the chunks that can be
    written now, each with its data, redacted where a secret or a match spans chunks. A chunk
    whose text ends with the start of a secret, or with a match or the start of one (that
    more text may continue), is held until a next one shows whether it does. The placeholder
    goes into the chunk where the secret or match starts and the rest of it is cut from the
    chunks after it; every chunk is still written, in order. At most MAX_HELD_CHUNKS are
    held: a pattern that could match without end does not hold a whole answer. `flush`
    returns what is held (at the end of the stream, or before any other event)."""

    MAX_HELD_CHUNKS = 64

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held: list[tuple[T, dict[str, Any]]] = []
        self._tails: dict[Channel, str] = {}
        # Patterns again, for partial matching (`regex`; imported only when there are any).
        self._partial = _partial_patterns(redactor.patterns)
        self._learn()

    def _learn(self) -> None:
        """Take the redactor's secrets as they are now (a key may be added mid-run)."""
        self._generation = self._redactor.generation
        self._secrets = self._redactor.secrets
        self._quick = _quick_look(tuple(self._secrets)) if self._redactor.verbatim else None

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def passes(self, text: str, start: int = 0) -> bool:
        """Whether a chunk whose JSON text is `text` would go straight through `push`, as
        its text alone shows: nothing is held, and no string in it holds a secret or ends
        with the start of one. False when in doubt (then `push` decides). `start` is where
        the chunk's raw data begins in `text`: `push` reads nothing else."""
        if self._generation != self._redactor.generation:
            self._learn()
        if not self._secrets and not self._partial:
            return True
        if self._held or self._quick is None:
            return False
        # What it finds in a string of another key (`"finish_reason":"tool_calls"`, with a
        # key starting `s`) is no text that `push` reads.
        match = self._quick.search(text, start)
        while match is not None:
            if not _in_other_value(text, match.start()):
                return False
            match = self._quick.search(text, match.end())
        return True

    def push(self, item: T, data: dict[str, Any]) -> list[tuple[T, dict[str, Any]]]:
        if self._generation != self._redactor.generation:
            self._learn()
        if not self._secrets and not self._partial:
            return [(item, data)]
        pieces = _text_pieces(data)
        if not self._held and not any(self._may_hold(holder[key]) for _, holder, key in pieces):
            return [(item, data)]  # what holding and flushing it at once would return
        self._held.append((item, data))
        for channel, holder, key in pieces:
            self._tails[channel] = self._tails.get(channel, "") + holder[key]
        if len(self._held) < self.MAX_HELD_CHUNKS and any(
            self._ends_open(text) for text in self._tails.values()
        ):
            return []
        return self.flush()

    def flush(self) -> list[tuple[T, dict[str, Any]]]:
        held, self._held, tails, self._tails = self._held, [], self._tails, {}
        # The tails are each channel's text over the held chunks, joined.
        if not held or not any(self._spans(text) for text in tails.values()):
            return held  # nothing to redact: the chunks go out as they are, uncopied
        copies = [(item, copy.deepcopy(data)) for item, data in held]
        by_channel: dict[Channel, list[tuple[dict[str, Any], str]]] = {}
        for _, data in copies:
            for channel, holder, key in _text_pieces(data):
                by_channel.setdefault(channel, []).append((holder, key))
        for parts in by_channel.values():
            self._redact_parts(parts)
        return copies

    def _may_hold(self, text: str) -> bool:
        """Whether a chunk's text holds a secret or ends with the start of one (or of a
        match; a match inside it is redacted with the chunk)."""
        return any(secret in text for secret in self._secrets) or self._ends_open(text)

    def _ends_open(self, text: str) -> bool:
        """Whether the text after `text` may complete a secret or a match begun in it."""
        return self._ends_with_secret_start(text) or self._ends_in_match(text)

    def _ends_in_match(self, text: str) -> bool:
        """Whether a pattern matches, or could match given more text, up to the end of
        `text` (a match there may go on: `CUST-12` then `3456`)."""
        end = len(text)
        for _, pattern in self._partial:
            last = None
            for last in pattern.finditer(text, partial=True):  # noqa: B007 (the last one)
                pass
            if last is not None and last.end() == end and last.end() > last.start():
                return True
        return False

    def _ends_with_secret_start(self, text: str) -> bool:
        for secret in self._secrets:
            # A start of the secret at the end of `text` begins with the secret's first
            # character within its last len(secret) - 1 characters.
            window = text[1 - len(secret) :]
            at = window.find(secret[0])
            while at >= 0:
                if secret.startswith(window[at:]):
                    return True
                at = window.find(secret[0], at + 1)
        return False

    def _redact_parts(self, parts: list[tuple[dict[str, Any], str]]) -> bool:
        texts = [holder[key] for holder, key in parts]
        joined = "".join(texts)
        spans = self._spans(joined)
        if not spans:
            return False
        start = 0
        for (holder, key), text in zip(parts, texts, strict=True):
            end = start + len(text)
            out = []
            for position in range(start, end):
                span = next((s for s in spans if s[0] <= position < s[1]), None)
                if span is None:
                    out.append(joined[position])
                elif position == span[0]:
                    out.append(span[2])
            holder[key] = "".join(out)
            start = end
        return True

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where the secrets are, as `Redactor.text` finds them (each secret in turn, left
        to right), then the patterns' matches, without overlaps; each with its placeholder."""
        spans: list[tuple[int, int, str]] = []

        def add(start: int, end: int, placeholder: str) -> None:
            if not any(start < taken[1] and taken[0] < end for taken in spans):
                spans.append((start, end, placeholder))

        for secret in self._secrets:
            at = text.find(secret)
            while at >= 0:
                add(at, at + len(secret), SECRET_PLACEHOLDER)
                at = text.find(secret, at + len(secret))
        for number, pattern in self._partial:
            for match in pattern.finditer(text):
                if match.end() > match.start():
                    add(match.start(), match.end(), f"[REDACTED:pattern-{number}]")
        return sorted(spans)


def _partial_patterns(patterns: list[re.Pattern[str]]) -> list[tuple[int, Any]]:
    """The patterns, numbered as `Redactor.text` numbers them, compiled by `regex`, which
    can tell a match cut short by the end of a text (`partial=True`); a pattern it cannot
    read is left to the per-chunk redaction."""
    if not patterns:
        return []
    import regex

    compiled: list[tuple[int, Any]] = []
    for number, pattern in enumerate(patterns, start=1):
        try:
            compiled.append((number, regex.compile(pattern.pattern, pattern.flags)))
        except regex.error:
            continue
    return compiled
