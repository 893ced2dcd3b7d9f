"""verify.py: check a Gatehouse webhook delivery. Python 3.8+, standard library only.

Library: from verify import verify; verify(header, raw_body, secrets) raises on failure.
CLI: echo '{"header":"t=...,v1=...","body":"<raw body>"}' | python3 verify.py whsec_a,whsec_b
"""
import hashlib
import hmac
import json
import re
import sys
import time


class VerificationError(Exception):
    """The request is not an authentic, fresh Gatehouse delivery."""


def verify(header, raw_body, secrets, tolerance=300):
    """Raise VerificationError unless header (X-Webhook-Signature) signs raw_body (the exact
    bytes received; a str is encoded as UTF-8) with one of secrets, at most tolerance seconds
    from now."""
    if not isinstance(header, str) or header.strip() == "":
        raise VerificationError("missing signature header")
    t = None
    sigs = []
    for part in header.split(","):
        part = part.strip()
        if part == "":
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise VerificationError("malformed signature header: part without '='")
        if key == "t":
            if t is not None:
                raise VerificationError("malformed signature header: more than one t")
            # re.fullmatch, not str.isdigit: isdigit accepts non-ASCII digits.
            if not re.fullmatch(r"[0-9]+", value):
                raise VerificationError("malformed signature header: t is not a decimal number")
            if len(value) > 18:
                raise VerificationError("malformed signature header: t out of range")
            t = value
        elif key == "v1":
            if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", value):
                raise VerificationError("malformed signature header: v1 is not hex")
            sigs.append(bytes.fromhex(value))
        # other keys (v0, v2, ...) are ignored
    if t is None:
        raise VerificationError("malformed signature header: no t")
    if not sigs:
        raise VerificationError("malformed signature header: no v1")

    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    signed = t.encode("ascii") + b"." + body
    if isinstance(secrets, str):
        # Iterating a str would use its characters as keys: one-letter, guessable.
        secrets = [secrets]
    matched = False
    for secret in secrets:
        if not secret:
            continue
        # The key is the secret string as given (whsec_...), not decoded.
        want = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(got, want) for got in sigs):
            matched = True
            break
    if not matched:
        raise VerificationError("no matching signature")

    if abs(int(time.time()) - int(t)) > tolerance:
        raise VerificationError("timestamp outside tolerance")


def main():
    secrets = [s for s in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if s]
    try:
        data = json.load(sys.stdin)
        if not isinstance(data, dict) or not isinstance(data.get("body"), str):
            raise VerificationError("input body is not a string")
        verify(data.get("header"), data["body"], secrets)
    except (VerificationError, ValueError) as err:
        print(f"fail: {err}")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
