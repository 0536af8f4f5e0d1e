"""Schema-driven fuzzing of both public APIs with schemathesis.

Started by `cargo xtask test` (see xtask/src/fuzz.rs): runs the service
binary on a fresh SQLite data directory with the repository's connectors
and CSV providers, signs up a fuzzing account, gives it a portal client
and key, then runs schemathesis over `/openapi.json` (bearer JWT) and
`/api/openapi.json` (portal key). Fails on any 5xx, any undocumented status
code or content type, and any response that does not match its schema.
Prints the figures of each run.

Usage: fuzz.py SCHEMATHESIS SERVER_BINARY CONNECTORS_DIR EXAMPLES
"""

import json
import os
import subprocess
import sys
import urllib.request

from service import Service

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "response_headers_conformance",
    ]
)


def call(base, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read() or b"null")


class Run:
    """One schemathesis run over the operations of `schema` whose path
    matches `split` (a regex; with `matching` false, those that do not), less
    the `exclude` paths; started at once."""

    def __init__(self, st, schema, token, examples, report, workdir, split=None, matching=True,
                 exclude=()):
        self.schema, self.report = schema, report
        self.label = schema
        if split:
            self.label += " (paths %s %s)" % ("matching" if matching else "not matching", split)
        args = [
            st, "run", schema,
            "-H", "Authorization: Bearer " + token,
            "--checks", CHECKS,
            "--max-examples", str(examples),
            "--phases", "examples,coverage,fuzzing",
            # One worker: with two, hypothesis parses lambda sources on two
            # threads at once, which CPython 3.11 can fail with a SystemError
            # ("AST constructor recursion depth mismatch"): a tool error that
            # is no finding. Two runs in two processes use both cores instead.
            "--workers", "1",
            "--seed", "20261123",
            "--no-shrink",
            # Not the default 10 s: at nice 19 beside the tests, a request
            # can wait that long for a core. A hang still fails the run.
            "--request-timeout", "120",
            "--report", "json",
            "--report-json-path", report,
        ]
        if split:
            args += ["--include-path-regex" if matching else "--exclude-path-regex", split]
        for path in exclude:
            args += ["--exclude-path", path]
        # Each run in its own scratch directory: schemathesis keeps a cache
        # of earlier failures in its working directory, and a run must not
        # depend on one. Its output is kept apart and printed when it ends,
        # so two runs at once do not interleave.
        os.makedirs(workdir, exist_ok=True)
        self.output = open(os.path.join(workdir, "output.txt"), "w+")
        self.process = subprocess.Popen(args, cwd=workdir, stdout=self.output, stderr=subprocess.STDOUT)

    def finish(self):
        code = self.process.wait()
        self.output.seek(0)
        sys.stdout.write(self.output.read())
        self.output.close()
        with open(self.report) as f:
            result = json.load(f)
        failures = {f["code"] + " " + f["title"]: f["count"] for f in result["failures"]}
        server_errors = sum(n for k, n in failures.items() if k.startswith("ST101"))
        print(
            "== fuzzed {}: {} operations, {} generated cases, {} with 5xx, "
            "{} failing checks {}".format(
                self.label,
                result["operations"]["tested"],
                result["test_cases"]["generated"],
                server_errors,
                sum(failures.values()),
                failures or "",
            ),
            flush=True,
        )
        return code


# The /api/v1 operations are fuzzed by two processes at once (a core each),
# split by the path's first segment into about equal halves of the work:
# those matching this, and the rest.
SPLIT = "^/api/v1/([a-o]|partner)"


def main():
    st, binary, connectors = (os.path.abspath(p) for p in sys.argv[1:4])
    examples = sys.argv[4]
    service = Service(
        binary, connectors, "cairn-fuzz-",
        # At nice 19 beside the platform tests, the service gets what they
        # leave of the cores: even from compiled components its start can
        # wait minutes behind them.
        start_secs=600,
        # Thousands of requests from one address in a minute: the limit
        # would answer most of them with 429 and fuzz nothing.
        CAIRN_RATE_LIMIT_PER_MINUTE="100000000",
        CAIRN_ACCESS_TOKEN_TTL_SECS="86400",
        CAIRN_JOB_WORKERS="1",
    )
    base, data = service.base, service.data
    runs = []
    try:
        tokens = []
        for n in (1, 2):
            # An account (a tenant) per run, so the two runs do not change
            # each other's data as they go.
            account = call(base, "POST", "/api/v1/auth/register", {
                "email": "fuzz%d@example.com" % n,
                "password": "correct horse battery staple",
                "organization": "Fuzzing MSP %d" % n,
            })
            tokens.append(account["access_token"])
        client = call(base, "POST", "/api/v1/portal/clients", {"name": "Fuzzed Customer"}, tokens[1])
        key = call(base, "POST", "/api/v1/portal/clients/%s/keys" % client["id"],
                   {"label": "fuzzing"}, tokens[1])
        examples = int(examples)
        # Signing out would end the session the run fuzzes with. The CVE
        # search asks NVD on every call, which this machine cannot reach:
        # its answer is a 502 whatever the input (its input checks are
        # covered by tests/platform/subscriptions.rs).
        exclude = ["/api/v1/auth/logout", "/api/v1/subscriptions/cves/search"]
        first = Run(st, base + "/openapi.json", tokens[0], examples,
                    os.path.join(data, "api-1.json"), os.path.join(data, "run-1"),
                    SPLIT, True, exclude)
        runs.append(first)
        second = Run(st, base + "/openapi.json", tokens[1], examples,
                     os.path.join(data, "api-2.json"), os.path.join(data, "run-2"),
                     SPLIT, False, exclude)
        runs.append(second)
        codes = [second.finish()]
        portal = Run(st, base + "/api/openapi.json", key["key"], examples,
                     os.path.join(data, "portal.json"), os.path.join(data, "run-portal"))
        runs.append(portal)
        codes += [first.finish(), portal.finish()]
    finally:
        # A run left behind by an error above must not outlive the service.
        for run in runs:
            if run.process.poll() is None:
                run.process.kill()
        service.stop()
    if any(codes):
        sys.exit("fuzzing found failures (above); the service log is " + service.log)
    service.remove()


if __name__ == "__main__":
    main()
