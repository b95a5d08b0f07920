"""The token helper checked without a server: HS256 against RFC 7515's example, every
signature verified by `cryptography` with the public key read back from the file or the JWKS
document the server would be given, and the claims and header as documented."""

import hashlib
import hmac
import json

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

from jwt_tokens import (EcKey, Ed25519Key, HmacKey, RsaKey, b64url, b64url_decode, claims, decode, encode, jwks, mint,
                        tampered, unsigned, write_jwks)


def parts(token):
    head, payload, signature = token.split(".")
    return f"{head}.{payload}".encode(), b64url_decode(signature)


def test_hs256_signs_rfc_7515s_example():
    # RFC 7515, appendix A.1: its key, its signing input, its signature.
    key = HmacKey(b64url_decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"))
    signing_input = ("eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFt"
                     "cGxlLmNvbS9pc19yb290Ijp0cnVlfQ").encode()
    assert b64url(key.sign(signing_input)) == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"


def test_a_token_carries_the_documented_claims_and_header(tmp_path):
    key = HmacKey("a secret", kid="k1")
    token = mint(key, sub="42", read=["user:42:*"], publish=["user:42:inbox"], lifetime=60, nbf=999, iss="https://login.example",
                 aud="ptr", now=1000)
    head, body = decode(token)
    assert head == {"alg": "HS256", "typ": "JWT", "kid": "k1"}
    assert body == {"exp": 1060, "nbf": 999, "iss": "https://login.example", "aud": "ptr", "sub": "42",
                    "ptr": {"read": ["user:42:*"], "publish": ["user:42:inbox"]}}
    signing_input, signature = parts(token)
    assert signature == hmac.new(b"a secret", signing_input, hashlib.sha256).digest()
    assert key.write_secret(tmp_path / "secret").read_bytes() == b"a secret"
    # Only what is asked for: no ptr without rights, no exp when there is to be none.
    assert claims(lifetime=None) == {}
    assert claims(exp=5, read=[]) == {"exp": 5, "ptr": {"read": [], "publish": []}}
    assert "kid" not in decode(mint(HmacKey()))[0]


def test_header_fields_can_lie_about_the_key():
    key = HmacKey(kid="real")
    head, _ = decode(mint(key, alg="RS256", kid="other", header={"typ": "at+jwt"}))
    assert head == {"alg": "RS256", "typ": "at+jwt", "kid": "other"}
    assert "kid" not in decode(mint(key, kid=None))[0]


def verify_rsa(public_key, token):
    signing_input, signature = parts(token)
    public_key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())


def verify_ec(public_key, token):
    signing_input, signature = parts(token)
    assert len(signature) == 64
    der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    public_key.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))


def verify_ed25519(public_key, token):
    signing_input, signature = parts(token)
    public_key.verify(signature, signing_input)


def from_jwk(jwk):
    """The public key a JWK describes, rebuilt from its fields alone."""
    number = lambda name: int.from_bytes(b64url_decode(jwk[name]), "big")  # noqa: E731
    if jwk["kty"] == "RSA":
        return rsa.RSAPublicNumbers(number("e"), number("n")).public_key()
    if jwk["kty"] == "EC":
        assert jwk["crv"] == "P-256" and len(b64url_decode(jwk["x"])) == 32 and len(b64url_decode(jwk["y"])) == 32
        return ec.EllipticCurvePublicNumbers(number("x"), number("y"), ec.SECP256R1()).public_key()
    assert jwk["kty"] == "OKP" and jwk["crv"] == "Ed25519"
    return ed25519.Ed25519PublicKey.from_public_bytes(b64url_decode(jwk["x"]))


@pytest.mark.parametrize("make, verify", [(RsaKey, verify_rsa), (EcKey, verify_ec), (Ed25519Key, verify_ed25519)])
def test_each_signature_verifies_with_the_pem_and_with_the_jwks(tmp_path, make, verify):
    key = make(kid="one")
    token = mint(key, sub="7", read=["*"])
    assert decode(token)[0] == {"alg": key.alg, "typ": "JWT", "kid": "one"}
    verify(serialization.load_pem_public_key(key.write_pem(tmp_path / "key.pem").read_bytes()), token)
    document = json.loads(write_jwks(tmp_path / "keys.json", [key]).read_text())
    (jwk,) = document["keys"]
    assert jwk["kid"] == "one" and jwk["alg"] == key.alg
    assert "d" not in jwk, "a private part in the JWKS"
    verify(from_jwk(jwk), token)
    # A claim changed after signing no longer verifies.
    with pytest.raises(InvalidSignature):
        verify(from_jwk(jwk), tampered(token, sub="8"))


def test_a_jwks_names_every_key_and_takes_no_hmac_secret():
    keys = [RsaKey(kid="r"), EcKey(kid="e"), Ed25519Key(kid="d")]
    assert [(jwk["kid"], jwk["alg"], jwk["kty"]) for jwk in jwks(keys)["keys"]] == [("r", "RS256", "RSA"), ("e", "ES256", "EC"),
                                                                                    ("d", "EdDSA", "OKP")]
    with pytest.raises(ValueError):
        jwks([HmacKey()])


def test_forgeries():
    token = unsigned({"exp": 1, "sub": "x"})
    assert token.endswith(".")
    assert decode(token) == ({"alg": "none", "typ": "JWT"}, {"exp": 1, "sub": "x"})
    # Key confusion: HS256 with an RSA public key's PEM as the secret.
    public = RsaKey()
    forged = encode(HmacKey(public.public_pem()), {"exp": 1})
    signing_input, signature = parts(forged)
    assert decode(forged)[0]["alg"] == "HS256"
    assert signature == hmac.new(public.public_pem(), signing_input, hashlib.sha256).digest()
    original = mint(HmacKey(b"s"), sub="a", lifetime=10, now=0)
    changed = tampered(original, sub="b")
    assert decode(changed)[1] == {"exp": 10, "sub": "b"}
    assert changed.rsplit(".", 1)[1] == original.rsplit(".", 1)[1]
