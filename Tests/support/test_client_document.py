"""What the Swift client declares by hand about Public/openapi.yaml, held against the document:
the operations it sends the token with are exactly those whose `security` names `token`."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def secured_by_document():
    document = yaml.safe_load((ROOT / "Public/openapi.yaml").read_text())
    secured = set()
    for path in document["paths"].values():
        for operation in path.values():
            if isinstance(operation, dict) and any("token" in scheme for scheme in operation.get("security", [])):
                secured.add(operation["operationId"])
    return secured


def secured_by_client():
    source = (ROOT / "Sources/RefreshClient/Middleware.swift").read_text()
    declaration = re.search(r"static let secured: Set<String> = \[(.*?)\]", source, re.S)
    assert declaration, "TokenMiddleware.secured is not declared where this test reads it"
    return set(re.findall(r'"(\w+)"', declaration.group(1)))


def test_the_client_sends_the_token_where_the_document_asks_for_it():
    assert secured_by_client() == secured_by_document()
