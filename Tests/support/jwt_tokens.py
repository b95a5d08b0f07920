"""JSON Web Tokens for tests, minted as an application's login would mint them, and the key
files the server verifies them with (`--auth-key FILE`): an HMAC secret, a PEM public key, a
JWKS document.

HS256 needs only the standard library; RS256, ES256 and EdDSA (Ed25519) need the
`cryptography` package, which `scripts/install-deps` puts in the project's `.venv`, and is
imported only when such a key is made. From a test:

    sys.path.insert(0, str(ROOT / "Tests" / "support"))
    from jwt_tokens import HmacKey, RsaKey, mint, write_jwks

    key = RsaKey(kid="app-1")
    key.write_pem(work / "rsa.pem")                # --auth-key work/rsa.pem
    token = mint(key, sub="42", read=["user:42:*"], publish=["user:42:inbox"], lifetime=600)

A token carries `exp` (always; from `lifetime` seconds unless given), and `nbf`, `iss`,
`aud`, `sub` when given; rights go in `ptr` as `{"read": [...], "publish": [...]}`. Its
header says `alg`, `typ: JWT`, and the key's `kid` when it has one. Tests of refusals bend
any of it: `alg` and `kid` in the header may be given apart from the key's, `header` and
`claims` add or replace fields, and `unsigned` and `tampered` make the classic forgeries.
"""

import base64
import hashlib
import hmac
import json
import os
import pathlib
import time


def b64url(data):
    """Base64url without padding, as JWS writes every part."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value):
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _uint(number, length=None):
    """An unsigned big-endian integer, as a JWK writes `n`, `e`, `x` and `y`."""
    length = length or max(1, (number.bit_length() + 7) // 8)
    return number.to_bytes(length, "big")


class HmacKey:
    """A shared secret for HS256. The server takes it as a file holding the secret's bytes."""

    alg = "HS256"

    def __init__(self, secret=None, kid=None):
        self.secret = secret if secret is not None else os.urandom(32)
        if isinstance(self.secret, str):
            self.secret = self.secret.encode()
        self.kid = kid

    def sign(self, signing_input):
        return hmac.new(self.secret, signing_input, hashlib.sha256).digest()

    def write_secret(self, path):
        """The secret file `--auth-key` takes: the secret's bytes, nothing more (no newline)."""
        path = pathlib.Path(path)
        path.write_bytes(self.secret)
        return path


class _AsymmetricKey:
    """A private key that signs, and whose public half the server is given."""

    alg = None

    def __init__(self, private_key, kid=None):
        self.private_key = private_key
        self.kid = kid

    def public_pem(self):
        """The public key as PEM (SubjectPublicKeyInfo), the form `--auth-key` reads."""
        from cryptography.hazmat.primitives import serialization
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def write_pem(self, path):
        path = pathlib.Path(path)
        path.write_bytes(self.public_pem())
        return path

    def public_jwk(self):
        """The public key as a JWK, with its `alg` and, when it has one, its `kid`."""
        jwk = {**self._jwk_fields(), "alg": self.alg, "use": "sig"}
        if self.kid is not None:
            jwk["kid"] = self.kid
        return jwk

    def _jwk_fields(self):
        raise NotImplementedError


class RsaKey(_AsymmetricKey):
    """An RSA key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256)."""

    alg = "RS256"

    def __init__(self, kid=None, bits=2048):
        from cryptography.hazmat.primitives.asymmetric import rsa
        super().__init__(rsa.generate_private_key(public_exponent=65537, key_size=bits), kid)

    def sign(self, signing_input):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        return self.private_key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())

    def _jwk_fields(self):
        numbers = self.private_key.public_key().public_numbers()
        return {"kty": "RSA", "n": b64url(_uint(numbers.n)), "e": b64url(_uint(numbers.e))}


class EcKey(_AsymmetricKey):
    """A P-256 key for ES256. JWS wants the signature as `r || s`, 32 bytes each, not the
    DER sequence `cryptography` gives."""

    alg = "ES256"

    def __init__(self, kid=None):
        from cryptography.hazmat.primitives.asymmetric import ec
        super().__init__(ec.generate_private_key(ec.SECP256R1()), kid)

    def sign(self, signing_input):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils
        r, s = utils.decode_dss_signature(self.private_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        return _uint(r, 32) + _uint(s, 32)

    def _jwk_fields(self):
        numbers = self.private_key.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "x": b64url(_uint(numbers.x, 32)), "y": b64url(_uint(numbers.y, 32))}


class Ed25519Key(_AsymmetricKey):
    """An Ed25519 key for EdDSA; the server takes it in a JWKS document, as an `OKP` key."""

    alg = "EdDSA"

    def __init__(self, kid=None):
        from cryptography.hazmat.primitives.asymmetric import ed25519
        super().__init__(ed25519.Ed25519PrivateKey.generate(), kid)

    def sign(self, signing_input):
        return self.private_key.sign(signing_input)

    def _jwk_fields(self):
        from cryptography.hazmat.primitives import serialization
        raw = self.private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw)}


def jwks(keys):
    """A JWKS document of the public keys. An HMAC secret has no place in one (the server's
    JWKS reader takes RSA, EC and OKP keys): it goes in a file of its own."""
    for key in keys:
        if isinstance(key, HmacKey):
            raise ValueError("an HMAC secret goes in a secret file (write_secret), not in a JWKS document")
    return {"keys": [key.public_jwk() for key in keys]}


def write_jwks(path, keys):
    path = pathlib.Path(path)
    path.write_text(json.dumps(jwks(keys), indent=2))
    return path


_UNSET = object()


def claims(*, sub=None, read=None, publish=None, lifetime=300, exp=None, nbf=None, iss=None, aud=None, now=None):
    """A token's claims: `exp` from `lifetime` seconds after `now` unless given (`exp=None`
    with `lifetime=None` leaves it out, for the test that a token needs one); the others
    only when given; `ptr` when `read` or `publish` is."""
    now = int(time.time() if now is None else now)
    body = {}
    if exp is not None:
        body["exp"] = int(exp)
    elif lifetime is not None:
        body["exp"] = now + int(lifetime)
    for name, value in (("nbf", nbf), ("iss", iss), ("aud", aud), ("sub", sub)):
        if value is not None:
            body[name] = value
    if read is not None or publish is not None:
        body["ptr"] = {"read": list(read or []), "publish": list(publish or [])}
    return body


def encode(key, payload, *, alg=_UNSET, kid=_UNSET, header=None):
    """A compact JWS of `payload` signed with `key`. `alg` and `kid` default to the key's
    (a `kid` of None is left out); `header` adds or replaces header fields."""
    head = {"alg": key.alg if alg is _UNSET else alg, "typ": "JWT"}
    kid = key.kid if kid is _UNSET else kid
    if kid is not None:
        head["kid"] = kid
    head.update(header or {})
    signing_input = f"{b64url(_json(head))}.{b64url(_json(payload))}".encode("ascii")
    return f"{signing_input.decode('ascii')}.{b64url(key.sign(signing_input))}"


def mint(key, *, alg=_UNSET, kid=_UNSET, header=None, extra=None, **fields):
    """A token signed with `key`, of `claims(**fields)` and `extra` claims on top."""
    return encode(key, {**claims(**fields), **(extra or {})}, alg=alg, kid=kid, header=header)


def unsigned(payload, alg="none"):
    """`alg: none` and an empty signature: a token anyone can write."""
    head = {"alg": alg, "typ": "JWT"}
    return f"{b64url(_json(head))}.{b64url(_json(payload))}."


def tampered(token, **changes):
    """`token` with claims changed after signing and its signature kept: a forgery the
    signature check must catch."""
    head, payload, signature = token.split(".")
    body = json.loads(b64url_decode(payload))
    body.update(changes)
    return f"{head}.{b64url(_json(body))}.{signature}"


def decode(token):
    """The header and the claims of a compact JWS, unverified: for a test to look at what
    it minted."""
    head, payload, _ = token.split(".")
    return json.loads(b64url_decode(head)), json.loads(b64url_decode(payload))
