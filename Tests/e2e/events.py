"""Validates every event the end-to-end scripts read against the stream's schemas in
Public/openapi.yaml (components/schemas/StreamEvent): each SSE file the scripts kept (run.sh
points E2E_EVENTS at a folder; lib.sh copies every event stream there) is parsed as the SSE
specification frames it, and each event checked. Fails on any invalid event, and when an
event type the document describes was never seen (the check would prove nothing for it).

    python3 Tests/e2e/events.py FOLDER
"""

import collections
import json
import pathlib
import sys

import jsonschema
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "support"))
from client import SSEParser  # noqa: E402
document = yaml.safe_load(open(ROOT / "Public" / "openapi.yaml"))
schema = {"$ref": "#/components/schemas/StreamEvent", "components": document["components"]}
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
schemas = document["components"]["schemas"]


def validator_of(name):
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]},
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


# Each event name's own schema, to say what is wrong with an event that fails the union.
branches = {schemas[name]["properties"]["event"]["const"]: validator_of(name)
            for name in (option["$ref"].rsplit("/", 1)[1] for option in schemas["StreamEvent"]["oneOf"])}
described = set(branches)


def parse(text):
    """The events of one stream, as the SSE specification frames them."""
    return [block for block in SSEParser().feed(text) if "data" in block]


seen = collections.Counter()
invalid = []
shared = 0
files = sorted(pathlib.Path(sys.argv[1]).glob("*"))
for path in files:
    text = path.read_bytes().decode("utf-8", errors="strict")
    for event in parse(text):
        name = event.get("event", "message")
        # A shared stream's framing (GET /api/events): `session` names the session of the
        # events after it; `ended` says that session left. The events between are checked.
        if name == "session":
            shared += 1
            continue
        if name == "ended":
            if not isinstance(json.loads(event["data"]).get("session"), str):
                invalid.append(f"{path.name}: ended without its session: {event['data'][:100]}")
            continue
        try:
            parsed = {"event": name, "id": event.get("id"), "data": json.loads(event["data"])}
        except ValueError as error:
            invalid.append(f"{path.name}: {name} {event.get('id')}: data is not JSON ({error})")
            continue
        if parsed["id"] is None:
            del parsed["id"]
        if not validator.is_valid(parsed):
            errors = list(branches[name].iter_errors(parsed)) if name in branches else []
            reason = (f"{'/'.join(map(str, errors[0].absolute_path))}: {errors[0].message}" if errors
                      else "not an event the document describes")
            invalid.append(f"{path.name}: {name} {parsed.get('id')}: {reason[:300]}")
        seen[name] += 1

for line in invalid[:20]:
    print(f"  FAIL {line}", file=sys.stderr)
missing = sorted(described - set(seen))
for name in missing:
    print(f"  FAIL no '{name}' event was seen in {len(files)} streams", file=sys.stderr)
counts = ", ".join(f"{name} {seen[name]}" for name in sorted(seen))
print(f"  {'ok  ' if not invalid else 'FAIL'} {sum(seen.values())} events from {len(files)} streams "
      f"validate against StreamEvent ({counts}; {shared} shared-stream names)")
failed = bool(invalid) + bool(missing)
print(f"events: {2 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
