"""Generated clients, driven as a new integrator would drive them.

Started by `cargo xtask test` (see xtask/src/clients.rs): runs the service
binary on a fresh SQLite data directory with the repository's connectors,
fetches `/openapi.json` and `/api/openapi.json`, validates both with
openapi-generator, generates a Python client of each with a pinned
openapi-python-client (any warning or skipped endpoint fails the run), then
drives the service through the generated code only: register and log in,
a CSV upload and its job's progress, the applications list, a nested
device search with a version comparison, a PDF report checked byte for
byte, and the portal's invoices, payment link, document upload and
download. Then the same journey through a TypeScript client
(node-client/: openapi-typescript types, openapi-fetch, `tsc --strict`),
with refused uploads answered by their typed errors. A fake payments provider (Stripe's Checkout Sessions, as the
payments connector speaks it) answers on 127.0.0.1.

Usage: client_test.py VENV SERVER_BINARY CONNECTORS_DIR
"""

import http.server
import importlib
import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

from service import Service


class FakeCheckout(http.server.BaseHTTPRequestHandler):
    """POST /v1/checkout/sessions (form-encoded) answers a session;
    GET /v1/checkout/sessions?limit=1 answers a list (the connection test)."""

    created = 0

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [], "has_more": False})

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        if form.get("mode") != ["payment"]:
            self._send(400, {"error": {"type": "invalid_request_error", "message": "mode"}})
            return
        FakeCheckout.created += 1
        session = "cs_test_%d" % FakeCheckout.created
        host = self.headers.get("host")
        self._send(200, {
            "id": session, "object": "checkout.session",
            "url": "http://%s/c/pay/%s" % (host, session),
            "expires_at": int(time.time()) + 3600, "status": "open",
            "payment_status": "unpaid", "mode": "payment",
        })

    def log_message(self, *args):
        pass


def generate(venv, document, package, workdir):
    """Generates a client package; fails on any warning (a skipped
    endpoint or schema is one)."""
    out = os.path.join(workdir, package)
    # Its post-generation hooks run ruff, installed beside it in the venv.
    env = dict(os.environ)
    env["PATH"] = os.path.join(os.path.abspath(venv), "bin") + os.pathsep + env.get("PATH", "")
    run = subprocess.run(
        [os.path.join(venv, "bin", "openapi-python-client"), "generate",
         "--path", document, "--meta", "none", "--output-path", out],
        capture_output=True, text=True, cwd=workdir, env=env)
    text = run.stdout + run.stderr
    if run.returncode != 0 or "Warning" in text or "WARNING" in text or "Unable" in text:
        sys.exit("openapi-python-client on %s:\n%s" % (document, text))
    print("== generated a Python client of %s" % os.path.basename(document))


def validate(venv, document):
    """openapi-generator's validation (its Java jar, from PyPI)."""
    tool = os.path.join(venv, "bin", "openapi-generator-cli")
    run = subprocess.run([tool, "validate", "-i", document], capture_output=True, text=True)
    text = run.stdout + run.stderr
    if run.returncode != 0 or "No validation issues detected" not in text and "Warnings" not in text:
        sys.exit("openapi-generator validate %s:\n%s" % (document, text))
    print("== openapi-generator validates %s" % os.path.basename(document))


def check(response, status, what):
    if response.status_code != status:
        sys.exit("%s: expected %d, got %d: %s" % (what, status, response.status_code,
                                                   response.content[:500]))
    return response.parsed


def drive(base, payments_url):
    from api_client import AuthenticatedClient, Client
    from api_client.api.auth import login, register
    from api_client.api.csv_sources import upload_to_source
    from api_client.api.devices import search_assets
    from api_client.api.inventory import list_applications
    from api_client.api.jobs import get_job
    from api_client.api.portal import create_client, create_invoice, mint_key, set_status
    from api_client.api.reports import download_report, generate_report, report_status
    from api_client import models
    from api_client.types import File

    anonymous = Client(base_url=base)
    check(register.sync_detailed(client=anonymous, body=models.RegisterRequest(
        email="integrator@msp.example", password="correct horse battery staple",
        organization="Generated MSP")), 201, "register")
    tokens = check(login.sync_detailed(client=anonymous, body=models.LoginRequest(
        email="integrator@msp.example", password="correct horse battery staple")), 200, "login")
    client = AuthenticatedClient(base_url=base, token=tokens.access_token)

    # A CSV upload, then its parse job's progress to the end.
    rows = ["device_name,application_name,version,publisher,platform"]
    for device, version in [("OLD-1", "119.0.6045.200"), ("OLD-2", "99.0.4844.51"),
                            ("NEW-1", "120.0.6099.71")]:
        rows.append("%s,Google Chrome,%s,Google LLC,Windows 10 Enterprise" % (device, version))
    rows.append("OLD-1,7-Zip,23.01,Igor Pavlov,Windows 10 Enterprise")
    csv = ("\n".join(rows) + "\n").encode()
    upload = check(upload_to_source.sync_detailed(
        "software-inventory", client=client,
        body=models.FileUpload(file=File(payload=io.BytesIO(csv), file_name="software.csv",
                                         mime_type="text/csv"))), 202, "upload")
    job_id = upload.job_id
    deadline = time.time() + 120
    while True:
        job = check(get_job.sync_detailed(job_id, client=client), 200, "job")
        if str(job.status) in ("success", "error", "canceled"):
            break
        if time.time() > deadline:
            sys.exit("the upload's job did not finish: %s" % job)
        time.sleep(0.2)
    if str(job.status) != "success":
        sys.exit("the upload's job ended %s: %s" % (job.status, job.error))
    # The rollup runs after the parse; wait until the list shows it.
    deadline = time.time() + 120
    while True:
        apps = check(list_applications.sync_detailed(client=client), 200, "applications")
        if apps.total >= 2:
            break
        if time.time() > deadline:
            sys.exit("the applications never appeared: %s" % apps)
        time.sleep(0.2)
    names = sorted(a.name for a in apps.items)
    if names != ["7-Zip", "Google Chrome"]:
        sys.exit("applications: %s" % names)

    # Who runs Chrome below 120? A nested group, the version compared in
    # version order (99 is below 120, not above it as text).
    Rule, Group = models.DeviceQueryRule, models.DeviceQueryGroup
    query = Group(kind=models.GroupKind.GROUP, combinator=models.Combinator.OR, rules=[
        Group(kind=models.GroupKind.GROUP, combinator=models.Combinator.AND, rules=[
            Rule(kind=models.RuleKind.RULE, field=models.DeviceQueryRuleField.APPLICATION_NAME,
                 operator=models.Operator.EQUALS, value="google chrome"),
            Rule(kind=models.RuleKind.RULE, field=models.DeviceQueryRuleField.APPLICATION_VERSION,
                 operator=models.Operator.LT, value="120"),
        ]),
    ])
    page = check(search_assets.sync_detailed(
        client=client, body=models.DeviceSearchRequest(query=query)), 200, "device search")
    found = sorted(a.device_name for a in page.items)
    if found != ["OLD-1", "OLD-2"]:
        sys.exit("Chrome below 120: %s" % found)
    # A misspelt field is skipped and named (the spec's rule 8); `strict`
    # refuses it instead.
    misspelt_query = {"combinator": "and", "rules": [
        {"kind": "rule", "field": "applicaton_name", "operator": "equals", "value": "x"}]}
    skipped = check(search_assets.sync_detailed(client=client, body=models.DeviceSearchRequest.from_dict(
        {"query": misspelt_query})), 200, "a search with a misspelt field")
    if [rule.path for rule in skipped.skipped_rules] != ["query.rules[0]"]:
        sys.exit("a misspelt field was not named as skipped: %s" % skipped.skipped_rules)
    misspelt = search_assets.sync_detailed(client=client, body=models.DeviceSearchRequest.from_dict(
        {"query": misspelt_query, "strict": True}))
    if misspelt.status_code != 422 or misspelt.parsed.field != "query.rules[0].field":
        sys.exit("a misspelt field under strict: %d %s" % (misspelt.status_code, misspelt.content))

    # A PDF report, downloaded as bytes.
    report = check(generate_report.sync_detailed(client=client, body=models.GenerateRequest(
        report_type=models.ReportType.SOFTWARE_INVENTORY, format_=models.Format.PDF)), 202,
        "report")
    deadline = time.time() + 120
    while True:
        status = check(report_status.sync_detailed(report.id, client=client), 200, "report status")
        if status.status in ("success", "error"):
            break
        if time.time() > deadline:
            sys.exit("the report did not finish")
        time.sleep(0.2)
    pdf = check(download_report.sync_detailed(report.id, client=client), 200, "download")
    data = pdf.payload.read()
    if not data.startswith(b"%PDF-") or b"startxref" not in data[-1024:] \
            or not data.rstrip().endswith(b"%%EOF"):
        sys.exit("the report is not an intact PDF (%d bytes)" % len(data))

    # The portal: a customer, its key, an invoice; then the customer's
    # side through the portal's own client.
    import typing
    from api_client.api.payments import payments_save_config
    config_type = typing.get_type_hints(payments_save_config.sync_detailed)["body"]
    check(payments_save_config.sync_detailed(client=client, body=config_type.from_dict({
        "base_url": payments_url, "api_key": "sk_test_generated",
        "webhook_secret": "whsec_generated", "success_url": "https://portal.example/paid"})),
        200, "payments config")
    customer = check(create_client.sync_detailed(client=client, body=models.NewClient(
        name="Generated Customer")), 201, "portal client")
    key = check(mint_key.sync_detailed(customer.id, client=client, body=models.NewKey(
        label="generated")), 201, "portal key")
    invoice = check(create_invoice.sync_detailed(customer.id, client=client,
                                                 body=models.NewInvoice.from_dict({
        "number": "INV-1", "description": "Managed services", "amount_cents": 125000,
        "currency": "EUR"})), 201, "invoice")
    check(set_status.sync_detailed(invoice.id, client=client, body=models.StatusChange(
        status=models.InvoiceStatus.SENT)), 200, "invoice sent")

    from portal_client import AuthenticatedClient as PortalClient
    from portal_client import Client as PortalAnonymous
    from portal_client.api.invoices import list_invoices, pay_invoice
    from portal_client.api.files import download_file, file_content, upload_file
    from portal_client import models as portal_models
    from portal_client.types import File as PortalFile
    holder = PortalClient(base_url=base, token=key.key)
    invoices = check(list_invoices.sync_detailed(client=holder), 200, "portal invoices")
    if [i.id for i in invoices] != [invoice.id]:
        sys.exit("portal invoices: %s" % invoices)
    link = check(pay_invoice.sync_detailed(invoice.id, client=holder), 200, "pay")
    if not link.payment_url.startswith(payments_url):
        sys.exit("payment link: %s" % link.payment_url)
    document = b"%PDF-1.4\n% a contract\n" + b"0" * 2048 + b"\n%%EOF\n"
    stored = check(upload_file.sync_detailed(client=holder, body=portal_models.FileUpload(
        file=PortalFile(payload=io.BytesIO(document), file_name="contract.pdf",
                        mime_type="application/pdf"))), 201, "document upload")
    redirect = download_file.sync_detailed(stored.id, client=holder)
    if redirect.status_code != 302 or "location" not in redirect.headers:
        sys.exit("document download: %d %s" % (redirect.status_code, redirect.headers))
    signed = redirect.headers["location"]
    parsed = urllib.parse.urlparse(urllib.parse.urljoin(base, signed))
    query = dict(urllib.parse.parse_qsl(parsed.query))
    content = file_content.sync_detailed(stored.id, client=PortalAnonymous(base_url=base),
                                         **{k: v for k, v in query.items()})
    if content.status_code != 200 or content.parsed.payload.read() != document:
        sys.exit("document content: %d" % content.status_code)
    print("== the generated clients drove register, login, upload, job, applications, "
          "device search, PDF report, portal invoices, pay, document upload and download")


NODE_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-client")


def drive_typescript(base, payments_url, documents):
    """Generates TypeScript types of both documents (openapi-typescript),
    type-checks the journey against them with `tsc --strict`, and runs it
    (openapi-fetch on Node's fetch)."""
    tools = os.path.join(NODE_CLIENT, "node_modules", ".bin")
    generated = os.path.join(NODE_CLIENT, "generated")
    os.makedirs(generated, exist_ok=True)
    for document, name in documents:
        out = os.path.join(generated, name)
        run = subprocess.run([os.path.join(tools, "openapi-typescript"), document, "-o", out],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("openapi-typescript on %s:\n%s%s" % (document, run.stdout, run.stderr))
    print("== generated TypeScript types of both documents")
    run = subprocess.run([os.path.join(tools, "tsc"), "-p", NODE_CLIENT],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("tsc --strict on the TypeScript journey:\n%s%s" % (run.stdout, run.stderr))
    print("== the TypeScript journey type-checks (tsc --strict)")
    run = subprocess.run(["node", os.path.join(NODE_CLIENT, "build", "journey.js"), base,
                          payments_url], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("the TypeScript journey:\n%s%s" % (run.stdout, run.stderr))
    print(run.stdout.strip())


def main():
    venv, binary, connectors = (os.path.abspath(p) for p in sys.argv[1:4])
    payments = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeCheckout)
    threading.Thread(target=payments.serve_forever, daemon=True).start()
    payments_url = "http://127.0.0.1:%d" % payments.server_address[1]
    service = Service(
        binary, connectors, "cairn-clients-",
        CAIRN_JOB_POLL_INTERVAL_MS="100",
        # The fake payments provider is on this machine, over plain http.
        CAIRN_PLUGIN_PLAIN_HTTP_HOSTS="127.0.0.1",
        CAIRN_OUTBOUND_PRIVATE_NETWORKS="127.0.0.1/32",
    )
    failed = True
    try:
        documents = []
        for path, name, package, types in [
                ("/openapi.json", "openapi.json", "api_client", "api.d.ts"),
                ("/api/openapi.json", "portal-openapi.json", "portal_client", "portal.d.ts")]:
            document = os.path.join(service.data, name)
            with urllib.request.urlopen(service.base + path) as response, \
                    open(document, "wb") as f:
                f.write(response.read())
            validate(venv, document)
            generate(venv, document, package, service.data)
            documents.append((document, types))
        sys.path.insert(0, service.data)
        importlib.invalidate_caches()
        drive(service.base, payments_url)
        drive_typescript(service.base, payments_url, documents)
        failed = False
    finally:
        service.stop()
        payments.shutdown()
        if failed:
            print("service log (tail):\n" + service.log_tail())
        service.remove()


if __name__ == "__main__":
    main()
