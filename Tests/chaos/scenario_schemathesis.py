"""Schemathesis against Public/openapi.yaml on a running server: every operation, through its
examples, coverage, fuzzing (positive and negative data) and stateful phases; the stateful
phase follows the document's `links` (a new session to its samples, refresh, load-more and
end; a publish to the pages around the published item).

Invariants: no 5xx (`not_a_server_error`), and no answer the document does not describe:
status codes (`status_code_conformance`), content types (`content_type_conformance`),
bodies (`response_schema_conformance`) and headers (`response_headers_conformance`); no
operation errors out.

The event streams (`GET /api/sessions/{id}/events`, `GET /api/events`) are left out: an
answer that never ends is not something schemathesis can read. scenario_sse_clients and
scenario_http_abuse cover the first, SharedStreamTests the second."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from lib import ROOT, Server, check, figure, finish, pick

MAX_EXAMPLES = pick(50, 1000)
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,response_headers_conformance")

schemathesis = next((path for path in (os.path.join(os.path.dirname(sys.executable), "schemathesis"),
                                        shutil.which("schemathesis")) if path and os.access(path, os.X_OK)), None)
if not schemathesis:
    check("schemathesis is installed (scripts/install-deps)", False)
    finish()

# Generous per-client limits: schemathesis is one client making thousands of sessions.
server = Server("--max-sessions-per-client", "100000", "--max-sessions", "100000", "--max-samples-per-second", "100000")
server.start()
# One worker: schemathesis's workers are threads, and Python 3.11's parser keeps its
# recursion count per interpreter, so two threads describing a strategy's lambda at once
# (hypothesis parses its source) can fail a phase with "AST constructor recursion depth
# mismatch" (CPython gh-106905): an error of the tool, not an answer of the server.
reports = tempfile.mkdtemp(prefix="ptr-chaos-schemathesis.")
began = time.monotonic()
run = subprocess.run(
    [schemathesis, "run", str(ROOT / "Public" / "openapi.yaml"), "--url", server.base,
     "--checks", CHECKS, "--max-examples", str(MAX_EXAMPLES), "--request-timeout", "10",
     "--exclude-path", "/api/sessions/{id}/events", "--exclude-path", "/api/events", "--phases", "examples,coverage,fuzzing,stateful",
     "--workers", "1", "--no-color", "--generation-database", "none", "--seed", os.environ.get("CHAOS_SEED", "20261123"),
     "--header", "Content-Type: application/json",
     "--report", "json", "--report-dir", reports],
    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=reports)
elapsed = time.monotonic() - began
output = run.stdout
report_files = sorted(glob.glob(os.path.join(reports, "json-*.json")))
report = json.load(open(report_files[-1])) if report_files else None
if run.returncode != 0 or report is None:
    # The failing cases, as schemathesis tells them (bodies cut short).
    failures = output.split("FAILURES", 1)[-1]
    print("\n".join(line[:300] for line in failures.splitlines()[:80]), flush=True)

check("schemathesis ran and wrote its report", report is not None, output[-500:])
if report:
    failures = report["failures"]
    server_errors = [f for f in failures if f["type"] in ("ServerError",) or f["code"] in ("ST101",)]
    check("no 5xx (not_a_server_error)", not server_errors, server_errors)
    check("no answer breaks the document (status code, content type, schema, headers)", not failures,
          [(f["title"], f["operations"]) for f in failures])
    check("no operation errored", not report["errors"] and report["operations"]["errored"] == 0, report["errors"][:3])
    check("every selected operation was tested",
          report["operations"]["tested"] == report["operations"]["selected"], report["operations"])
    check("schemathesis exits 0", run.returncode == 0, run.returncode)
    figure("operations tested", report["operations"]["tested"])
    figure("operations in the document", report["operations"]["total"])
    figure("test cases run", report["test_cases"]["generated"])
    figure("failures", report["test_cases"]["unique_failures"])
    figure("phases", json.dumps({name: phase["status"] for name, phase in report["phases"].items()}))
    stateful = next((line.strip() for line in output.splitlines() if "API Links:" in line), "none")
    scenarios = next((line.strip() for line in output.splitlines() if "Scenarios:" in line), "")
    figure("stateful", f"{scenarios}; {stateful}")
check("the server is alive after schemathesis", server.alive())
figure("max examples per operation", MAX_EXAMPLES)
figure("duration", elapsed, "s")
server.stop()
shutil.rmtree(reports, ignore_errors=True)
finish()
