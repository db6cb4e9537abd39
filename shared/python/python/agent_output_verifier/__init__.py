"""Agent Output Verifier receipts, offline: check a receipt's signature and that it is about
what you hold, recompute the four receipt hashes, canonicalize JSON (RFC 8785) and compute the
verdict the service would give. The same Rust as the service and the ``verifier`` CLI.

Every function accepts JSON either as Python values (dict, list, ...) or as JSON text (``str``
or ``bytes``), except :func:`canonicalize`, where a ``str`` is a JSON string value. Problems
raise ``ValueError`` naming the reason.
"""
import json as _json

from . import _native

__all__ = ["verify_receipt", "hashes", "canonicalize", "verify", "sign_deliverable", "__version__"]
__version__ = _native.__version__


def _text(value):
    """JSON text of a Python value, or the text itself when it is JSON text already."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    return _value(value)


def _value(value):
    """JSON text of a Python value (NaN and infinities are not JSON)."""
    return _json.dumps(value, ensure_ascii=False, allow_nan=False)


def verify_receipt(response, keys, request=None, *, output=None, schema=None, rules=None, bounds=None):
    """Check a signed response (a receipt or a trust score).

    ``keys``: an agent card, a list of key entries or one entry. With ``request`` (the whole
    verification request) the receipt's four hashes are recomputed and must match; with
    ``output``, ``schema``, ``rules``/``bounds`` (parts held separately) those hashes must. Do
    so for any receipt you did not request yourself: a genuine receipt may be about another
    output, a laxer schema or other rules.

    Returns ``{"valid": True, "key_version", "context", "identity", "bound"}``: ``identity`` the
    agent the response names (``{"agent_id", "identity"}``) or None, ``bound`` the hashes that
    were recomputed and matched (empty: only the signature was checked), ``key_revoked_at`` and
    ``warning`` set when the key was revoked after the receipt's timestamp (a holder of a leaked
    key can backdate). A receipt attested at or after its key's revocation raises ValueError,
    as does any other invalid one.
    """
    if request is not None and any(p is not None for p in (output, schema, rules, bounds)):
        raise ValueError("give the request, or its parts, not both")
    part = lambda v: None if v is None else _value(v)  # noqa: E731
    answer = _native.verify_receipt_json(
        _text(response), _text(keys), None if request is None else _text(request),
        part(output), part(schema), part(rules), part(bounds))
    return _json.loads(answer)


def hashes(request):
    """The four receipt hashes of a verification request: output_hash, schema_hash,
    rules_hash, request_hash (lowercase hex SHA-256)."""
    return _json.loads(_native.hashes_json(_text(request)))


def canonicalize(value):
    """RFC 8785 (JCS) bytes of a JSON value (``bytes`` are read as JSON text)."""
    if isinstance(value, (bytes, bytearray)):
        return _native.canonicalize_json(bytes(value).decode("utf-8"))
    return _native.canonicalize_json(_value(value))


def verify(request, key_file=None, public_url=None):
    """The offline verdict of a verification request: what ``verifier verify`` answers.

    Unsigned (no ``verify`` block, no ``attestation``) unless ``key_file`` names a signing key
    file (the local server's ``signing-key.json``); ``public_url`` states where that key is
    published (the receipt names no URL otherwise). Raises ValueError for an invalid request.
    """
    return _json.loads(_native.verify_json(_text(request), key_file, public_url))


def sign_deliverable(key_file, agent_id, task_id, output):
    """What ``verifier agent sign`` prints: ``{"agent_id", "task_id", "output_hash",
    "agent_signature"}`` for the output, signed with the agent key file (made by ``verifier
    agent keygen``), whose agent ID must be ``agent_id``."""
    return _json.loads(_native.sign_deliverable_json(str(key_file), agent_id, task_id, _value(output)))
