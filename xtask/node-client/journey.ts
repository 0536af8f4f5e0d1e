// A day's job through a TypeScript client generated from the service's own
// OpenAPI documents (openapi-typescript types, openapi-fetch calls), as an
// MSP developer would write it: type-checked with `tsc --strict` before it
// runs, so a schema a generator cannot read fails the build here.
//
// Usage: node build/journey.js BASE_URL PAYMENTS_URL
// Started by xtask/client_test.py after the Python client's run, on the
// same service.

import createClient from "openapi-fetch";
import type { paths } from "./generated/api.js";
import type { paths as portalPaths } from "./generated/portal.js";

const [base, paymentsUrl] = process.argv.slice(2);
if (!base || !paymentsUrl) {
  throw new Error("usage: journey.js BASE_URL PAYMENTS_URL");
}

function fail(what: string, detail: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

/** The bytes of a file as one part named `file`, as every upload takes. */
function form(name: string, bytes: Uint8Array<ArrayBuffer>, type: string): FormData {
  const data = new FormData();
  data.append("file", new Blob([bytes], { type }), name);
  return data;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) {
      return found;
    }
    if (Date.now() > deadline) {
      fail(`${what} did not happen`, null);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const anonymous = createClient<paths>({ baseUrl: base });
const credentials = { email: "node@msp.example", password: "correct horse battery staple" };
const registered = await anonymous.POST("/api/v1/auth/register", {
  body: { ...credentials, organization: "Node MSP" },
});
if (registered.response.status !== 201) fail("register", registered.error);
const login = await anonymous.POST("/api/v1/auth/login", { body: credentials });
if (!login.data) fail("login", login.error);
const api = createClient<paths>({
  baseUrl: base,
  headers: { Authorization: `Bearer ${login.data.access_token}` },
});

// A CSV upload, then its parse job to the end.
const rows = ["device_name,application_name,version,publisher,platform"];
for (const [device, version] of [
  ["NODE-OLD-1", "119.0.6045.200"],
  ["NODE-OLD-2", "99.0.4844.51"],
  ["NODE-NEW-1", "120.0.6099.71"],
]) {
  rows.push(`${device},Google Chrome,${version},Google LLC,Windows 10 Enterprise`);
}
rows.push("NODE-OLD-1,7-Zip,23.01,Igor Pavlov,Windows 10 Enterprise");
const csv = new TextEncoder().encode(rows.join("\n") + "\n");
const uploaded = await api.POST("/api/v1/csv-sources/{key}/upload", {
  params: { path: { key: "software-inventory" } },
  // The schema's binary `file` is a string to the generator; the form
  // carries the bytes.
  body: { file: "software.csv" },
  bodySerializer: () => form("software.csv", csv, "text/csv"),
});
if (!uploaded.data) fail("upload", uploaded.error);
const jobId = uploaded.data.job_id;
if (!jobId) fail("the upload names no job", uploaded.data);
const job = await until("the upload's job", async () => {
  const { data, error } = await api.GET("/api/v1/jobs/{job_id}", {
    params: { path: { job_id: jobId } },
  });
  if (!data) fail("job", error);
  return ["success", "error", "canceled"].includes(data.status) ? data : undefined;
});
if (job.status !== "success") fail("the upload's job", job);

// The rollup runs after the parse.
const applications = await until("the applications", async () => {
  const { data, error } = await api.GET("/api/v1/inventory/applications");
  if (!data) fail("applications", error);
  return data.total >= 2 ? data : undefined;
});
const names = applications.items.map((a) => a.name).sort();
if (names.join("|") !== "7-Zip|Google Chrome") fail("applications", names);

// Who runs Chrome below 120, in version order.
const search = await api.POST("/api/v1/devices/devices/search", {
  body: {
    query: {
      kind: "group",
      combinator: "and",
      rules: [
        { kind: "rule", field: "application_name", operator: "equals", value: "google chrome" },
        { kind: "rule", field: "application_version", operator: "lt", value: "120" },
      ],
    },
  },
});
if (!search.data) fail("device search", search.error);
const below = search.data.items.map((d) => d.device_name).sort();
if (below.join("|") !== "NODE-OLD-1|NODE-OLD-2") fail("Chrome below 120", below);

// A PDF report, downloaded as bytes.
const report = await api.POST("/api/v1/reports/generate", {
  body: { report_type: "software_inventory", format: "pdf" },
});
if (!report.data) fail("report", report.error);
const reportId = report.data.id;
const written = await until("the report", async () => {
  const { data, error } = await api.GET("/api/v1/reports/{report_id}/status", {
    params: { path: { report_id: reportId } },
  });
  if (!data) fail("report status", error);
  return ["success", "error"].includes(data.status) ? data : undefined;
});
if (written.status !== "success") fail("the report", written);
const pdf = await api.GET("/api/v1/reports/{report_id}/download", {
  params: { path: { report_id: reportId } },
  parseAs: "arrayBuffer",
});
if (!pdf.data) fail("download", pdf.error);
const pdfText = new TextDecoder("latin1").decode(pdf.data);
if (!pdfText.startsWith("%PDF-") || !pdfText.trimEnd().endsWith("%%EOF")) {
  fail("the report is not an intact PDF", pdf.data.byteLength);
}

// Refused uploads answer with their typed error, every time: a body
// larger than the sockets' buffers, sent whole before the answer is read.
const big = new Uint8Array(5 * 1024 * 1024).fill(97);
const stranger = createClient<paths>({
  baseUrl: base,
  headers: { Authorization: "Bearer not-a-token" },
});
const refusals: [string, typeof api, string, string, number, string][] = [
  ["a PDF to a CSV source", api, "software-inventory", "inventory.pdf", 400, "upload_rejected"],
  ["an unknown source", api, "no-such-source", "inventory.csv", 404, "not_found"],
  ["a bad token", stranger, "software-inventory", "inventory.csv", 401, "not_authenticated"],
];
for (const [what, client, key, name, status, kind] of refusals) {
  for (let attempt = 0; attempt < 10; attempt++) {
    const refused = await client.POST("/api/v1/csv-sources/{key}/upload", {
      params: { path: { key } },
      body: { file: name },
      bodySerializer: () => form(name, big, "text/csv"),
    });
    if (refused.response.status !== status || refused.error?.type !== kind) {
      fail(`${what} (#${attempt})`, { status: refused.response.status, error: refused.error });
    }
  }
}

// The portal: a customer, its key and an invoice; then the customer's side
// through the portal's own document.
const payments = await api.POST("/api/v1/payments/config", {
  body: {
    base_url: paymentsUrl,
    api_key: "sk_test_node",
    webhook_secret: "whsec_node",
    success_url: "https://portal.example/paid",
  },
});
if (!payments.data) fail("payments config", payments.error);
const customer = await api.POST("/api/v1/portal/clients", { body: { name: "Node Customer" } });
if (!customer.data) fail("portal client", customer.error);
const clientId = customer.data.id;
const minted = await api.POST("/api/v1/portal/clients/{client_id}/keys", {
  params: { path: { client_id: clientId } },
  body: { label: "node" },
});
if (!minted.data) fail("portal key", minted.error);
const invoice = await api.POST("/api/v1/portal/clients/{client_id}/invoices", {
  params: { path: { client_id: clientId } },
  body: { number: "INV-N1", description: "Managed services", amount_cents: 125000, currency: "EUR" },
});
if (!invoice.data) fail("invoice", invoice.error);
const invoiceId = invoice.data.id;
const sent = await api.POST("/api/v1/portal/invoices/{invoice_id}/status", {
  params: { path: { invoice_id: invoiceId } },
  body: { status: "sent" },
});
if (!sent.data) fail("invoice sent", sent.error);

const portal = createClient<portalPaths>({
  baseUrl: base,
  headers: { Authorization: `Bearer ${minted.data.key}` },
});
const invoices = await portal.GET("/api/invoices");
if (!invoices.data) fail("portal invoices", invoices.error);
if (invoices.data.map((i) => i.id).join() !== invoiceId) fail("portal invoices", invoices.data);
const link = await portal.POST("/api/invoices/{id}/pay", { params: { path: { id: invoiceId } } });
if (!link.data?.paymentUrl.startsWith(paymentsUrl)) fail("payment link", link.data ?? link.error);
const contract = new TextEncoder().encode("%PDF-1.4\n% a contract\n" + "0".repeat(2048) + "\n%%EOF\n");
const stored = await portal.POST("/api/files", {
  body: { file: "contract.pdf" },
  bodySerializer: () => form("contract.pdf", contract, "application/pdf"),
});
if (!stored.data) fail("document upload", stored.error);
const fileId = stored.data.id;
const redirect = await portal.GET("/api/files/{id}/download", {
  params: { path: { id: fileId } },
  redirect: "manual",
});
const location = redirect.response.headers.get("location");
if (redirect.response.status !== 302 || !location) {
  fail("document download", redirect.response.status);
}
const signed = new URL(location, base);
const content = await createClient<portalPaths>({ baseUrl: base }).GET("/api/files/{id}/content", {
  params: {
    path: { id: fileId },
    query: {
      expires: Number(signed.searchParams.get("expires")),
      signature: signed.searchParams.get("signature") ?? "",
    },
  },
  parseAs: "arrayBuffer",
});
if (!content.data || Buffer.compare(Buffer.from(content.data), Buffer.from(contract)) !== 0) {
  fail("document content", content.response.status);
}
console.log(
  "== the TypeScript client drove register, login, upload, job, applications, device search, " +
    "PDF report, 30 refused uploads, portal invoices, pay, document upload and download",
);
