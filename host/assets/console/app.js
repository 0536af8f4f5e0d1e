// Cairn console: a small client of the public API, served by the binary.
// It builds every element with DOM methods and sets text with textContent
// only, so a name from the inventory is never parsed as HTML. It keeps no
// token: the session cookie authenticates it, like any browser client.

const main = document.getElementById("main");
const nav = document.getElementById("nav");

/** An element with attributes (`on*` keys are listeners) and children. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** How a run ended (the API's `success` / `error`), as a person reads it. */
function statusWords(status) {
  return { success: "succeeded", error: "failed" }[status] ?? status;
}

/** Whether a job, upload, scan or report has ended. */
function ended(status) {
  return ["success", "error", "canceled", "superseded"].includes(status);
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `The service answered ${status}.`);
    this.status = status;
    this.field = body && body.field;
  }
}

/** Calls `/api/v1{path}`; answers the JSON body or throws an ApiError. */
async function api(method, path, body) {
  const response = await fetch(`/api/v1${path}`, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** Removes the errors a form shows. */
function clearErrors(form) {
  for (const old of form.querySelectorAll(".field-error, .error")) old.remove();
  for (const input of form.querySelectorAll("[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    // Back to the field's own hint, if it has one.
    if (input.dataset.hint) input.setAttribute("aria-describedby", input.dataset.hint);
    else input.removeAttribute("aria-describedby");
  }
}

/** Shows an API error beside the field it names, else above the form. */
function showError(form, error) {
  clearErrors(form);
  const input = error.field && form.querySelector(`[name="${CSS.escape(error.field)}"]`);
  const id = `error-${Math.random().toString(36).slice(2)}`;
  const message = el("p", { class: input ? "field-error" : "error", id, role: "alert" }, error.message);
  if (input) {
    const hint = input.dataset.hint || input.getAttribute("aria-describedby");
    if (hint) input.dataset.hint = hint;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", hint ? `${id} ${hint}` : id);
    input.closest("label").after(message);
    input.focus();
  } else {
    form.prepend(message);
  }
}

/** Sends `form` with `send` (given its fields as an object and as
 * FormData); draws the page again when that worked, else shows the API's
 * error beside the field it names. */
function submits(form, send) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    try {
      await send(Object.fromEntries(data), data);
      render();
    } catch (error) {
      showError(form, error);
    }
  });
  return form;
}

function field(label, attrs) {
  return el("label", {}, label, el("input", attrs));
}

function table(columns, rows) {
  const body = el(
    "tbody",
    {},
    rows.length
      ? rows.map((cells) => el("tr", {}, cells.map((cell, i) => el("td", { class: columns[i][1] }, cell))))
      : el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, "Nothing here yet.")),
  );
  // Two rows or more sort by any column from its heading (the rows shown:
  // a page of a longer list sorts within the page).
  const headings = columns.map(([name, cls], i) => {
    const th = el("th", { scope: "col", class: cls });
    if (rows.length < 2) {
      th.append(name);
      return th;
    }
    const button = el("button", { type: "button", class: "sort" }, name);
    button.addEventListener("click", () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = (row) => row.children[i].textContent.trim();
      const numeric = cls === "num";
      const sorted = [...body.children].sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        const order = numeric
          ? (Number.parseFloat(x) || 0) - (Number.parseFloat(y) || 0)
          : x.localeCompare(y, undefined, { numeric: true, sensitivity: "base" });
        return ascending ? order : -order;
      });
      body.append(...sorted);
    });
    th.append(button);
    return th;
  });
  return el(
    "div",
    // Focusable, so that a keyboard can scroll a table wider than the
    // screen.
    { class: "table-wrap", tabindex: 0 },
    el("table", {}, el("thead", {}, el("tr", {}, headings)), body),
  );
}

function figures(pairs) {
  return el(
    "dl",
    { class: "figures" },
    pairs.map(([label, value]) => el("div", {}, el("dt", {}, label), el("dd", {}, value ?? "–"))),
  );
}

/** Previous and next links of a server-side page. */
function pager(page, params, total, limit) {
  const link = (p, label) => {
    const next = new URLSearchParams(params);
    next.set("page", String(p));
    return el("a", { href: `${location.pathname}?${next}` }, label);
  };
  const pages = Math.max(1, Math.ceil(total / limit));
  return el(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    page > 1 ? link(page - 1, "Previous page") : null,
    el("span", {}, `Page ${page} of ${pages} (${total} in all)`),
    page < pages ? link(page + 1, "Next page") : null,
  );
}

function pageNumber(params) {
  const page = Number.parseInt(params.get("page") || "1", 10);
  return Number.isFinite(page) && page > 0 ? page : 1;
}

/** A severity or an SLA state in colour and in words: the colour is a
 * second cue, never the only one. */
function badge(kind, value, words) {
  if (!value) return "";
  return el("span", { class: `badge ${kind}-${value}` }, words ?? value.replaceAll("_", " "));
}

const SLA_WORDS = { within: "within SLA", due_soon: "due soon", overdue: "overdue", excepted: "excepted" };

/** An open finding's SLA state with its days left or over. */
function slaBadge(sla) {
  if (!sla || !sla.sla_state) return "";
  const days = sla.days_left;
  const when =
    sla.sla_state === "excepted" || days === null || days === undefined
      ? ""
      : days < 0
        ? ` (${-days} d over)`
        : ` (${days} d left)`;
  return badge("sla", sla.sla_state, `${SLA_WORDS[sla.sla_state]}${when}`);
}

/** A CVE's open findings against their SLA, in a few words. */
function cveSla(sla) {
  if (!sla) return "";
  if (sla.overdue) return badge("sla", "overdue", `${sla.overdue} overdue`);
  if (sla.due_soon) return badge("sla", "due_soon", `${sla.due_soon} due soon`);
  return sla.earliest_due_at ? `due ${sla.earliest_due_at.slice(0, 10)}` : "";
}

// ---- pages -------------------------------------------------------------

async function signIn(_match, _params, _me, register) {
  document.title = register ? "Create an account - Cairn" : "Sign in - Cairn";
  const form = el(
    "form",
    { class: "stack", novalidate: true },
    field("Email", { name: "email", type: "email", autocomplete: "email", required: true }),
    field("Password", {
      name: "password",
      type: "password",
      autocomplete: register ? "new-password" : "current-password",
      required: true,
    }),
    register ? field("Organization", { name: "organization", autocomplete: "organization" }) : null,
    el("button", { type: "submit" }, register ? "Create account" : "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    if (!data.organization) delete data.organization;
    try {
      await api("POST", register ? "/auth/register" : "/auth/login", data);
      go("/console/");
    } catch (error) {
      showError(form, error);
    }
  });
  return [
    el("h1", {}, register ? "Create an account" : "Sign in"),
    form,
    el(
      "p",
      {},
      register
        ? el("a", { href: "/console/login" }, "I have an account")
        : el("a", { href: "/console/register" }, "Create an account"),
    ),
  ];
}

/** The page an invite link opens: who invites, as what; joining signs in. */
async function acceptInvite([, raw]) {
  document.title = "Join an organization - Cairn";
  const token = decodeURIComponent(raw);
  let invite;
  try {
    invite = await api("GET", `/invites/${encodeURIComponent(token)}`);
  } catch (error) {
    if (!(error instanceof ApiError) || ![404, 410].includes(error.status)) throw error;
    const why = error.status === 404 ? "This invite link is not valid: check that it was copied whole." : `${error.message}.`;
    return [
      el("h1", {}, "This invite cannot be used"),
      el("p", { class: "error", role: "alert" }, why),
      el("p", {}, "Ask whoever invited you for a new invite, or ", el("a", { href: "/console/login" }, "sign in"), "."),
    ];
  }
  const form = el(
    "form",
    { class: "stack", novalidate: true },
    field("Email", { name: "email", type: "email", value: invite.email, readonly: true, autocomplete: "username" }),
    field("Your name", { name: "name", autocomplete: "name" }),
    field("Password", { name: "password", type: "password", autocomplete: "new-password", required: true, "aria-describedby": "password-hint" }),
    el("p", { id: "password-hint", class: "muted" }, "At least 8 characters. If you already have an account with this email, its password."),
    el("button", { type: "submit" }, "Join"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    const body = { password: data.password };
    if (data.name.trim()) body.name = data.name.trim();
    try {
      await api("POST", `/invites/${encodeURIComponent(token)}/accept`, body);
      go("/console/");
    } catch (error) {
      showError(form, error);
    }
  });
  return [
    el("h1", {}, `Join ${invite.organization}`),
    el("p", {}, `You are invited as ${invite.role.replaceAll("_", " ")}. The invite expires on ${when(Date.parse(invite.expires_at))}.`),
    form,
  ];
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

/** Horizontal bars of labelled values, drawn as SVG (no script or style
 * inline), with the values as text beside them. */
function barChart(title, items) {
  const max = Math.max(1, ...items.map((i) => i.value));
  const row = 22;
  const chart = svg("svg", {
    viewBox: `0 0 400 ${items.length * row + 4}`,
    width: "100%",
    role: "img",
    "aria-label": `${title}: ${items.map((i) => `${i.label ?? "unknown"} ${i.value}`).join(", ")}`,
  });
  items.forEach((item, n) => {
    const y = n * row + 2;
    chart.append(
      svg("text", { x: 0, y: y + 14, "font-size": 12, fill: "#1b1f24" }, document.createTextNode(item.label ?? "unknown")),
      svg("rect", { x: 140, y, width: Math.max(1, (item.value / max) * 200), height: 16, fill: "#0b5cad" }),
      svg("text", { x: 346, y: y + 14, "font-size": 12, fill: "#1b1f24" }, document.createTextNode(String(item.value))),
    );
  });
  return chart;
}

/** Values by day as a line, drawn as SVG. */
function lineChart(title, points) {
  const max = Math.max(1, ...points.map((p) => p.value));
  const step = points.length > 1 ? 380 / (points.length - 1) : 0;
  const coords = points.map((p, i) => `${10 + i * step},${110 - (p.value / max) * 100}`).join(" ");
  const last = points[points.length - 1];
  return svg(
    "svg",
    {
      viewBox: "0 0 400 120",
      width: "100%",
      role: "img",
      "aria-label": `${title}: ${points.length} days${last ? `, ${last.value} on ${last.date}` : ""}`,
    },
    svg("polyline", { points: coords || "10,110", fill: "none", stroke: "#0b5cad", "stroke-width": 2 }),
    ...points.map((p, i) => svg("circle", { cx: 10 + i * step, cy: 110 - (p.value / max) * 100, r: 3, fill: "#0b5cad" })),
  );
}

/** The page behind a figure: a number widget links to the list it counts. */
const METRIC_PAGES = {
  kev_findings: "/console/vulnerabilities?kev=true",
  stale_devices: "/console/devices",
  sla_compliance: "/console/sla",
  mean_time_to_fix: "/console/sla",
};

function widgetBody(title, data, metric) {
  switch (data.shape) {
    case "number": {
      const figure = data.value === null ? "–" : quantity(data.value, data.unit);
      const page = data.value === null ? null : METRIC_PAGES[metric];
      return el("p", { class: "big" }, page ? el("a", { href: page, "aria-label": `${title}: ${figure}` }, figure) : figure);
    }
    case "categories":
      return data.items.length ? barChart(title, data.items) : el("p", { class: "muted" }, "Nothing yet.");
    case "series":
      return data.points.length ? lineChart(title, data.points) : el("p", { class: "muted" }, "Nothing yet.");
    case "rows":
      return table(
        data.columns.map((c) => [words(c)]),
        data.rows.map((r) => r.map((v, i) => widgetCell(data.columns[i], v))),
      );
    default:
      return el("p", { class: "muted" }, "This widget's shape is not shown here.");
  }
}

/** A figure with its unit in words: "1 application", "3 devices", "87 %". */
function quantity(value, unit) {
  if (!unit || unit === "count") return String(value);
  if (unit === "percent") return `${value} %`;
  const one = unit.endsWith("ies") ? `${unit.slice(0, -3)}y` : unit.replace(/s$/, "");
  return `${value} ${value === 1 ? one : unit}`;
}

const ACRONYMS = { cve: "CVE", epss: "EPSS", kev: "KEV", id: "ID", sla: "SLA", os: "OS", edr: "EDR", mdm: "MDM", rmm: "RMM", cvss: "CVSS" };

/** A field's name as a heading: words, acronyms in capitals, a moment
 * without its `_at`: `last_run_at` reads "Last run", `cve_id` "CVE ID". */
function words(name) {
  const parts = name.split("_").filter((part, i, all) => !(part === "at" && i === all.length - 1 && i > 0));
  const text = parts.map((part) => ACRONYMS[part] ?? part).join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A widget table's cell; a CVE or a device links to its page. */
function widgetCell(column, value) {
  if (value === null || value === undefined) return "";
  const text = String(value);
  if (column === "cve_id") return el("a", { href: `/console/cves/${encodeURIComponent(text)}` }, text);
  if (column === "device_name") return el("a", { href: `/console/devices/${encodeURIComponent(text)}` }, text);
  if (column.endsWith("_at")) return moment(text);
  return text;
}

/** A widget's remove button: the dashboard is drawn again without it. */
function removeWidget(dashboard, widget) {
  return el(
    "button",
    {
      type: "button",
      class: "quiet",
      "aria-label": `Remove the widget ${widget.title}`,
      onclick: async () => {
        await api("DELETE", `/dashboards/${dashboard.id}/widgets/${widget.id}`);
        render();
      },
    },
    "Remove",
  );
}

/** The form that adds a widget: a metric of the catalogue, shown by a type
 * that can draw the metric's shape. */
function addWidgetForm(dashboard, metrics, types) {
  const typeSelect = el("select", { name: "widget_type" });
  const metricSelect = el(
    "select",
    { name: "metric" },
    metrics.map((m) => el("option", { value: m.name }, m.description)),
  );
  const offerTypes = () => {
    const metric = metrics.find((m) => m.name === metricSelect.value);
    const fitting = types.filter((t) => metric && t.accepts.includes(metric.shape));
    typeSelect.replaceChildren(...fitting.map((t) => el("option", { value: t.name }, t.description)));
  };
  metricSelect.addEventListener("change", offerTypes);
  offerTypes();
  const form = el(
    "form",
    { class: "inline", "aria-label": "Add a widget" },
    field("Title", { name: "title", required: true, maxlength: 100 }),
    el("label", {}, "Metric", metricSelect),
    el("label", {}, "Shown as", typeSelect),
    el("button", { type: "submit" }, "Add widget"),
  );
  return submits(form, (data) =>
    api("POST", `/dashboards/${dashboard.id}/widgets`, {
      title: data.title,
      widget_type: data.widget_type,
      data_source: { metric: data.metric },
    }),
  );
}

async function home(_match, _params, me) {
  document.title = "Overview - Cairn";
  const [dashboard, metrics, types, tenant] = await Promise.all([
    api("GET", "/dashboards/default"),
    api("GET", "/dashboards/catalog/metrics"),
    api("GET", "/dashboards/catalog/widget-types"),
    // While acting, the banner names the customer acted in.
    me.acting ? api("GET", "/tenant/me") : null,
  ]);
  const widgets = await Promise.all(
    (dashboard.widgets || []).map(async (w) => {
      const heading = el("div", { class: "widget-head" }, el("h2", {}, w.title), removeWidget(dashboard, w));
      try {
        const data = await api("POST", `/dashboards/widgets/${w.id}/data`);
        // A table of more than three columns takes the grid's whole width
        // rather than clip its columns (sync health has seven).
        const wide = data.data.shape === "rows" && data.data.columns.length > 3;
        return el("section", { class: wide ? "widget wide" : "widget", "aria-label": w.title, tabindex: 0 }, heading, widgetBody(w.title, data.data, w.data_source.metric));
      } catch (error) {
        return el("section", { class: "widget" }, heading, el("p", { class: "error" }, error.message));
      }
    }),
  );
  const lookup = el(
    "form",
    { class: "inline", role: "search" },
    field("CVE id", { name: "cve", placeholder: "CVE-2024-3400", required: true }),
    el("button", { type: "submit" }, "Open CVE"),
  );
  lookup.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`/console/cves/${encodeURIComponent(new FormData(lookup).get("cve").trim())}`);
  });
  return [
    el("h1", {}, "Overview"),
    el(
      "p",
      { class: "muted" },
      tenant ? `Acting in ${tenant.name} as ${me.email} (${me.role}); every change is audited.` : `Signed in as ${me.email} (${me.role}).`,
    ),
    el("h2", {}, "Research a CVE"),
    lookup,
    el("div", { class: "widgets" }, widgets),
    el("h2", {}, "Add a widget"),
    addWidgetForm(dashboard, metrics, types),
  ];
}

async function applications(_match, params) {
  document.title = "Applications - Cairn";
  const limit = 50;
  const page = pageNumber(params);
  const search = params.get("search") || "";
  const query = new URLSearchParams({ skip: String((page - 1) * limit), limit: String(limit) });
  if (search) query.set("search", search);
  const result = await api("GET", `/inventory/applications?${query}`);
  const form = el(
    "form",
    { class: "inline", role: "search", method: "get", action: "/console/applications" },
    field("Name contains", { name: "search", value: search }),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = new FormData(form).get("search").trim();
    go(`/console/applications${value ? `?${new URLSearchParams({ search: value })}` : ""}`);
  });
  return [
    el("h1", {}, "Applications"),
    form,
    table(
      [["Application"], ["Vendor"], ["Devices", "num"], ["Versions (devices)"], ["Open CVEs", "num"]],
      result.items.map((a) => [
        el("a", { href: `/console/research?${new URLSearchParams({ application: a.name })}` }, a.name),
        a.vendor ?? "",
        a.device_count,
        (a.version_counts || []).map((v) => `${v.version} (${v.count})`).join(", "),
        a.cve_count,
      ]),
    ),
    pager(page, params, result.total, limit),
  ];
}

/** A source's record as label and value rows. */
function record(name, value) {
  if (!value || typeof value !== "object") return null;
  const rows = Object.entries(value)
    .filter(([, v]) => v !== null && typeof v !== "object")
    .map(([k, v]) => [words(k), String(v)]);
  return [el("h2", {}, `As ${name} sees it`), table([["Field"], ["Value"]], rows)];
}

async function device([, raw]) {
  const name = decodeURIComponent(raw);
  document.title = `${name} - Cairn`;
  const asset = await api("GET", `/devices/by-name/${encodeURIComponent(name)}`);
  const [findings, software] = await Promise.all([
    api("GET", `/vulnerabilities/?device=${encodeURIComponent(asset.device_name)}&limit=100`),
    api("GET", `/inventory/items?device_name=${encodeURIComponent(asset.device_name)}&limit=500`),
  ]);
  // A plan over this one device's open findings, through the device search.
  const remediate = el("form", { class: "inline" }, el("button", { type: "submit" }, "Remediate this device"));
  submits(remediate, async () => {
    const devices = { kind: "group", combinator: "and", rules: [{ kind: "rule", field: "device_name", operator: "equals", value: asset.device_name }] };
    const made = await api("POST", "/remediation/plans", { devices });
    window.history.pushState(null, "", `/console/remediation/${encodeURIComponent(made.plan.id)}`);
  });
  return [
    el("h1", {}, asset.device_name),
    remediate,
    figures([
      ["Tier", asset.tier],
      ["Platform", asset.os_platform],
      ["OS version", asset.os_version],
      ["User", asset.user_email ?? asset.user_name],
      ["Applications", asset.application_count],
      ["Sources", (asset.sources || []).join(", ")],
      ["RMM groups", (asset.group_ids || []).join(", ") || "none"],
      ["Last seen", moment(asset.last_seen)],
    ]),
    el("h2", {}, "Open vulnerabilities"),
    table(
      [["CVE"], ["Severity"], ["KEV"], ["EPSS", "num"], ["SLA"], ["Triage"], ["Applications"], ["Fixed in"]],
      findings.items.map((v) => [
        el("a", { href: `/console/cves/${encodeURIComponent(v.cve_id)}` }, v.cve_id),
        badge("sev", v.severity),
        v.kev ? "yes" : "",
        v.epss_score === null || v.epss_score === undefined ? "" : `${(v.epss_score * 100).toFixed(1)} %`,
        cveSla(v.sla),
        (v.triage_statuses || []).map((t) => t.replaceAll("_", " ")).join(", "),
        (v.applications || []).join(", "),
        (v.fix_versions || []).join(", "),
      ]),
    ),
    el("h2", {}, "Installed software"),
    table(
      [["Application"], ["Version"], ["Publisher"], ["Source"]],
      software.items.map((i) => [
        el("a", { href: `/console/research?${new URLSearchParams({ application: i.application_name })}` }, i.application_name),
        i.version ?? "",
        i.publisher ?? "",
        i.source,
      ]),
    ),
    record("the mdm", asset.mdm),
    record("the edr", asset.edr),
    record("the scanner", asset.scan),
  ];
}

async function research(_match, params) {
  document.title = "Research - Cairn";
  const application = params.get("application") || "";
  const vendor = params.get("vendor") || "";
  const product = params.get("product") || "";
  const form = el(
    "form",
    { class: "inline", role: "search" },
    field("Application (as installed)", { name: "application", value: application }),
    el("span", { class: "muted" }, "or"),
    field("CPE vendor", { name: "vendor", value: vendor }),
    field("CPE product", { name: "product", value: product }),
    el("button", { type: "submit" }, "Research"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim()) next.set(k, String(v).trim());
    go(`/console/research?${next}`);
  });
  const out = [el("h1", {}, "Research"), form];
  if (!application && !(vendor && product)) return out;
  const query = new URLSearchParams();
  if (application) query.set("application", application);
  else {
    query.set("vendor", vendor);
    query.set("product", product);
  }
  try {
    const found = await api("GET", `/research/product?${query}`);
    out.push(
      el("p", {}, `Products: ${found.products.join(", ") || "none identified"}. Newest version in use: ${found.newest_version_in_use ?? "–"}.`),
      el("h2", {}, "Versions you run"),
      table(
        [["Application"], ["Version"], ["Devices", "num"], ["Vulnerable"], ["Open CVEs"], ["Fixed in"]],
        found.versions.map((v) => [
          v.application_name,
          v.version,
          v.device_count,
          v.vulnerable ? "yes" : "no",
          v.open_cves.join(", "),
          v.fix_version ?? "",
        ]),
      ),
      el("h2", {}, `CVEs of the product (${found.cves.total})`),
      table(
        [["CVE"], ["Your devices", "num"]],
        found.cves.items.map((c) => [
          el("a", { href: `/console/cves/${encodeURIComponent(c.cve_id)}` }, c.cve_id),
          c.device_count,
        ]),
      ),
    );
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    showError(form, error);
  }
  return out;
}

async function vulnerabilities(_match, params) {
  document.title = "Vulnerabilities - Cairn";
  const limit = 50;
  const page = pageNumber(params);
  const query = new URLSearchParams({ skip: String((page - 1) * limit), limit: String(limit) });
  for (const key of ["severity", "kev", "epss_min", "status", "sla_state", "search"]) {
    if (params.get(key)) query.set(key, params.get(key));
  }
  // Known exploited first unless asked otherwise: a KEV CVE without a
  // CVSS score is still among the first.
  query.set("sort", params.get("sort") || "-kev");
  const select = (name, label, options) =>
    el(
      "label",
      {},
      label,
      el("select", { name }, options.map(([value, text]) => el("option", { value, selected: params.get(name) === value }, text))),
    );
  const form = el(
    "form",
    { class: "inline", role: "search" },
    select("severity", "Severity", [["", "any"], ["critical", "critical"], ["high", "high"], ["medium", "medium"], ["low", "low"]]),
    select("kev", "Known exploited", [["", "any"], ["true", "in KEV"]]),
    field("EPSS at least", { name: "epss_min", type: "number", step: "0.01", min: "0", max: "1", value: params.get("epss_min") || "" }),
    select("status", "Status", [["", "open"], ["accepted", "triaged away"], ["fixed", "fixed"], ["all", "all"]]),
    select("sla_state", "SLA", [["", "any"], ["overdue", "overdue"], ["due_soon", "due soon"], ["within", "within SLA"], ["excepted", "excepted"]]),
    field("CVE or text", { name: "search", value: params.get("search") || "" }),
    select("sort", "Sort", [["", "KEV first"], ["-cvss_score", "CVSS, highest first"], ["-epss_score", "EPSS, highest first"], ["-published", "newest first"], ["-device_count", "most devices first"]]),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim()) next.set(k, String(v).trim());
    go(`/console/vulnerabilities${next.size ? `?${next}` : ""}`);
  });
  const out = [el("h1", {}, "Vulnerabilities"), form];
  try {
    const result = await api("GET", `/vulnerabilities/?${query}`);
    out.push(
      table(
        [["CVE"], ["Severity"], ["CVSS", "num"], ["KEV"], ["EPSS", "num"], ["Devices", "num"], ["SLA"], ["Applications"], ["Fixed in"]],
        result.items.map((v) => [
          el("a", { href: `/console/cves/${encodeURIComponent(v.cve_id)}` }, v.cve_id),
          badge("sev", v.severity),
          v.cvss_score ?? "",
          v.kev ? "yes" : "",
          v.epss_score ?? "",
          v.device_count,
          cveSla(v.sla),
          (v.applications || []).join(", "),
          (v.fix_versions || []).join(", "),
        ]),
      ),
      pager(page, params, result.total, limit),
    );
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    showError(form, error);
  }
  return out;
}

const DEVICE_FIELDS = [
  ["device_name", "Device name"],
  ["device_id", "Device id"],
  ["os_platform", "Platform"],
  ["os_version", "OS version"],
  ["user_email", "User email"],
  ["user_name", "User name"],
  ["application_name", "Application name"],
  ["application_count", "Number of applications"],
  ["source", "Source"],
];
const OPERATORS = [
  ["contains", "contains"],
  ["not_contains", "does not contain"],
  ["equals", "is"],
  ["not_equals", "is not"],
  ["starts_with", "starts with"],
  ["not_starts_with", "does not start with"],
  ["ends_with", "ends with"],
  ["not_ends_with", "does not end with"],
  ["gt", "is greater than"],
  ["gte", "is at least"],
  ["lt", "is less than"],
  ["lte", "is at most"],
  ["is_empty", "is empty"],
  ["is_not_empty", "is not empty"],
  ["in", "is one of (commas)"],
  ["not_in", "is none of (commas)"],
];
const COMBINATORS = [
  ["and", "all of these rules"],
  ["or", "any of these rules"],
  ["none", "none of these rules"],
  ["not_all", "not all of these rules"],
];

/** The extra rules of the device search from the URL's `rules` (JSON). */
function rulesFrom(params) {
  try {
    const group = JSON.parse(params.get("rules") || "null");
    if (group && Array.isArray(group.rules)) return group;
  } catch {
    // A hand-edited URL: start without extra rules.
  }
  return { combinator: "and", rules: [] };
}

/** One rule's row: field, operator, value and a remove button. */
function ruleRow(rule, n) {
  const options = (list, chosen) => list.map(([value, label]) => el("option", { value, selected: value === chosen }, label));
  const row = el(
    "div",
    { class: "rule", role: "group", "aria-label": `Rule ${n}` },
    el("label", {}, `Rule ${n} field`, el("select", { name: "rule_field" }, options(DEVICE_FIELDS, rule.field))),
    el("label", {}, `Rule ${n} operator`, el("select", { name: "rule_operator" }, options(OPERATORS, rule.operator))),
    el("label", {}, `Rule ${n} value`, el("input", { name: "rule_value", value: rule.value ?? "" })),
  );
  const remove = () => {
    // The rules after it move up a number, so that no two share a label.
    const list = row.parentElement;
    row.remove();
    list.replaceChildren(...[...list.children].map((other, i) => ruleRow(ruleOf(other), i + 1)));
  };
  row.append(el("button", { type: "button", class: "quiet", "aria-label": `Remove rule ${n}`, onclick: remove }, "Remove"));
  return row;
}

/** The rule a row of the form shows. */
function ruleOf(row) {
  return {
    field: row.querySelector("[name=rule_field]").value,
    operator: row.querySelector("[name=rule_operator]").value,
    value: row.querySelector("[name=rule_value]").value.trim(),
  };
}

async function devices(_match, params) {
  document.title = "Devices - Cairn";
  const limit = 50;
  const page = pageNumber(params);
  const name = params.get("name") || "";
  const platform = params.get("platform") || "";
  const application = params.get("application") || "";
  const below = params.get("below") || "";
  const byRisk = params.get("sort") === "risk";
  const extra = rulesFrom(params);
  const rules = [];
  const rule = (field, operator, value) => ({ kind: "rule", field, operator, value });
  if (name) rules.push(rule("device_name", "contains", name));
  if (platform) rules.push(rule("os_platform", "equals", platform));
  if (below) {
    // The same application below the version (compared in version order).
    const same = [rule("application_version", "lt", below)];
    if (application) same.unshift(rule("application_name", "contains", application));
    rules.push({ kind: "group", combinator: "and", rules: same });
  } else if (application) rules.push(rule("application_name", "contains", application));
  if (extra.rules.length) {
    // Nested: the quick fields all hold, and the rules as their combinator says.
    rules.push({
      kind: "group",
      combinator: extra.combinator,
      rules: extra.rules.map((r) => (["is_empty", "is_not_empty"].includes(r.operator) ? rule(r.field, r.operator) : rule(r.field, r.operator, r.value))),
    });
  }
  const body = { skip: (page - 1) * limit, limit };
  if (rules.length) body.query = { kind: "group", combinator: "and", rules };
  const ruleList = el("div", { class: "rules" }, extra.rules.map((r, i) => ruleRow(r, i + 1)));
  const addRule = el(
    "button",
    {
      type: "button",
      class: "quiet",
      onclick: () => {
        const row = ruleRow({ field: "application_name", operator: "contains" }, ruleList.children.length + 1);
        ruleList.append(row);
        row.querySelector("select").focus();
      },
    },
    "Add a rule",
  );
  const form = el(
    "form",
    { class: "stack wide", role: "search" },
    el(
      "div",
      { class: "inline" },
      field("Device name contains", { name: "name", value: name }),
      field("Platform is", { name: "platform", value: platform, placeholder: "windows" }),
      field("Has an application containing", { name: "application", value: application }),
      field("Of a version below", { name: "below", value: below, placeholder: "120" }),
      el(
        "label",
        {},
        "Sort",
        el(
          "select",
          { name: "sort" },
          el("option", { value: "" }, "by name"),
          el("option", { value: "risk", selected: byRisk }, "by risk: KEV, critical, high, EPSS"),
        ),
      ),
    ),
    el(
      "fieldset",
      {},
      el("legend", {}, "More rules"),
      el(
        "label",
        {},
        "Match",
        el("select", { name: "combinator" }, COMBINATORS.map(([value, label]) => el("option", { value, selected: value === extra.combinator }, label))),
      ),
      ruleList,
      el("p", {}, addRule),
    ),
    el("p", {}, el("button", { type: "submit" }, "Search")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const key of ["name", "platform", "application", "below", "sort"]) {
      const value = form.elements[key].value.trim();
      if (value) next.set(key, value);
    }
    const chosen = [...ruleList.children].map(ruleOf);
    if (chosen.length) next.set("rules", JSON.stringify({ combinator: form.elements.combinator.value, rules: chosen }));
    go(`/console/devices${next.size ? `?${next}` : ""}`);
  });
  const out = [el("h1", {}, "Devices"), form];
  const deviceLink = (name) => el("a", { href: `/console/devices/${encodeURIComponent(name)}` }, name);
  const epss = (score) => (score === null || score === undefined ? "" : `${(score * 100).toFixed(1)} %`);
  if (byRisk) {
    // Every device with an open finding, the riskiest first.
    const risky = await api("GET", `/vulnerabilities/devices?skip=${(page - 1) * limit}&limit=${limit}`);
    out.push(
      el("p", { class: "muted" }, "Devices with open findings, the riskiest first; the search fields do not apply to this order."),
      table(
        [["Device"], ["KEV CVEs", "num"], ["Critical", "num"], ["High", "num"], ["Open CVEs", "num"], ["Highest EPSS", "num"]],
        risky.items.map((d) => [deviceLink(d.device_name), d.kev, d.critical, d.high, d.open_cves, epss(d.max_epss)]),
      ),
      pager(page, params, risky.total, limit),
    );
    return out;
  }
  try {
    const result = await api("POST", "/devices/devices/search", body);
    const names = result.items.map((d) => d.device_name);
    const exposure = names.length
      ? await api("GET", `/vulnerabilities/devices?limit=500&names=${encodeURIComponent(names.join(","))}`)
      : { items: [] };
    const exposed = new Map(exposure.items.map((e) => [e.device_name, e]));
    out.push(
      table(
        [["Device"], ["Platform"], ["OS version"], ["User"], ["Applications", "num"], ["Open CVEs", "num"], ["KEV CVEs", "num"], ["Sources"]],
        result.items.map((d) => {
          const e = exposed.get(d.device_name);
          return [
            deviceLink(d.device_name),
            d.os_platform ?? "",
            d.os_version ?? "",
            d.user_email ?? d.user_name ?? "",
            d.application_count,
            e ? e.open_cves : 0,
            e ? e.kev : 0,
            (d.sources || []).join(", "),
          ];
        }),
      ),
      pager(page, params, result.total, limit),
    );
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    showError(form, error);
  }
  return out;
}

/** Every triage status the API takes, in the order a CVE moves through. */
const TRIAGE = [
  "to_evaluate",
  "in_analysis",
  "remediation_in_progress",
  "resolved",
  "not_affected",
  "risk_accepted",
  "false_positive",
];

async function cve([, raw]) {
  const id = decodeURIComponent(raw);
  document.title = `${id} - Cairn`;
  let record;
  try {
    record = await api("GET", `/research/cve/${encodeURIComponent(id)}`);
  } catch (error) {
    // A CVE the service does not hold, and NVD does not know or cannot be
    // asked now: said as such, the upstream's own words kept aside.
    if (!(error instanceof ApiError) || ![404, 502, 503].includes(error.status)) throw error;
    const why =
      error.status === 404
        ? `${id} is not in this service's CVE data, and NVD does not know it either. Check the id.`
        : `${id} is not in this service's CVE data, and NVD could not be reached to look it up. Try again later, or load the CVE data offline (cairn vuln import).`;
    return [
      el("h1", {}, id),
      el("p", { role: "status" }, why),
      error.status === 404 ? null : el("details", {}, el("summary", {}, "What the service said"), el("p", {}, error.message)),
    ];
  }
  const triage = await api("GET", `/vulnerabilities/cve/${encodeURIComponent(id)}/triage`).catch(() => null);
  // The form opens on the product's current status and terms, so saving it
  // unchanged changes nothing; with several products, one is chosen.
  const statuses = (triage && triage.statuses) || [];
  const productKey = (t) => `${t.vendor}|${t.product}`;
  const statusSelect = el("select", { name: "status" }, TRIAGE.map((s) => el("option", { value: s }, s.replaceAll("_", " "))));
  const justification = el("input", { name: "justification" });
  const expires = el("input", { name: "expires_at", type: "date" });
  const productSelect =
    statuses.length > 1
      ? el("select", { name: "product" }, statuses.map((t) => el("option", { value: productKey(t) }, `${t.vendor} ${t.product}`.trim())))
      : null;
  const show = (key) => {
    const current = statuses.find((t) => productKey(t) === key) ?? statuses[0];
    statusSelect.value = current ? current.status : "to_evaluate";
    justification.value = (current && current.justification) ?? "";
    expires.value = current && current.expires_at ? current.expires_at.slice(0, 10) : "";
  };
  if (productSelect) productSelect.addEventListener("change", () => show(productSelect.value));
  show(productSelect ? productSelect.value : undefined);
  const form = el(
    "form",
    { class: "stack" },
    productSelect ? el("label", {}, "Product", productSelect) : null,
    el("label", {}, "Status", statusSelect),
    el("label", {}, "Justification", justification),
    el("label", {}, "Expires (for risk accepted)", expires),
    field("Comment", { name: "comment" }),
    el("button", { type: "submit" }, "Save triage"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    for (const k of Object.keys(data)) if (!data[k]) delete data[k];
    if (data.expires_at) data.expires_at = new Date(`${data.expires_at}T23:59:59Z`).toISOString();
    if (data.product) {
      const [vendor, product] = data.product.split("|");
      Object.assign(data, { vendor, product });
    }
    try {
      await api("PUT", `/vulnerabilities/cve/${encodeURIComponent(id)}/triage`, data);
      render();
    } catch (error) {
      showError(form, error);
    }
  });
  const history = (triage && triage.history) || [];
  // Each open finding's due date, by device, application and version.
  const open = await api("GET", `/vulnerabilities/cve/${encodeURIComponent(id)}/devices?limit=500`).catch(() => ({ items: [] }));
  const dueOf = new Map(open.items.map((f) => [`${f.device_name}|${f.application_name}|${f.version}`, f.sla]));
  const exception = el(
    "form",
    { class: "stack" },
    field("Devices (commas; empty: every device with the CVE)", { name: "devices" }),
    field("Reason", { name: "reason", required: true }),
    field("Compensating control", { name: "compensating_control" }),
    field("Expires", { name: "expires_at", type: "date", required: true }),
    el("button", { type: "submit" }, "Request an exception"),
  );
  submits(exception, async (data) => {
    const body = {
      cve_id: id,
      devices: (data.devices || "").split(",").map((d) => d.trim()).filter(Boolean),
      reason: data.reason,
      expires_at: data.expires_at ? new Date(`${data.expires_at}T23:59:59Z`).toISOString() : "",
    };
    if (data.compensating_control) body.compensating_control = data.compensating_control;
    await api("POST", "/sla/exceptions", body);
    // `history` here is the triage's.
    window.history.pushState(null, "", "/console/sla");
  });
  const remediate = el("form", { class: "inline" }, el("button", { type: "submit" }, "Remediate"));
  submits(remediate, async () => {
    const made = await api("POST", "/remediation/plans", { cve_id: id });
    window.history.pushState(null, "", `/console/remediation/${encodeURIComponent(made.plan.id)}`);
  });
  return [
    el("h1", {}, id),
    el("p", {}, record.description ?? ""),
    figures([
      ["Severity", badge("sev", record.severity)],
      ["CVSS", record.cvss_score],
      ["Known exploited (KEV)", record.kev ? "yes" : "no"],
      ["EPSS", record.epss_score === null || record.epss_score === undefined ? null : `${(record.epss_score * 100).toFixed(1)} %`],
      ["Devices affected", record.affected_device_count],
    ]),
    el("h2", {}, "Affected versions"),
    table(
      [["Application"], ["Version"], ["Fixed in"], ["Devices", "num"]],
      (record.affected_applications || []).map((a) => [
        a.application_name ?? a.application ?? "",
        a.version ?? "",
        a.fix_version ?? "",
        a.devices ?? a.device_count ?? "",
      ]),
    ),
    el("h2", {}, "Affected devices"),
    table(
      [["Device"], ["Application"], ["Version"], ["Tier"], ["Due"], ["SLA"]],
      (record.affected_findings || []).map((f) => {
        const sla = dueOf.get(`${f.device_name}|${f.application_name}|${f.version}`);
        return [
          el("a", { href: `/console/devices/${encodeURIComponent(f.device_name)}` }, f.device_name),
          f.application_name,
          f.version,
          sla ? sla.tier : "",
          sla && sla.due_at ? sla.due_at.slice(0, 10) : "",
          slaBadge(sla),
        ];
      }),
    ),
    el("h2", {}, "Remediation"),
    el("p", { class: "muted" }, "Plans the update to the fixed version on each affected device, through the RMM; nothing is sent before an admin approves the plan."),
    remediate,
    el("h2", {}, "Exception"),
    el("p", { class: "muted" }, "Sets the CVE's findings aside from the SLA until it expires, once an admin other than you (or the customer, through the client portal) approves."),
    exception,
    el("h2", {}, "Triage"),
    form,
    el("h2", {}, "Triage history"),
    table(
      [["When"], ["Who"], ["Product"], ["From"], ["To"], ["Justification"], ["Comment"]],
      history.map((h) => [
        moment(h.changed_at),
        h.changed_by ?? "",
        `${h.vendor ?? ""} ${h.product ?? ""}`.trim(),
        (h.from_status ?? "").replaceAll("_", " "),
        (h.to_status ?? "").replaceAll("_", " "),
        h.justification ?? "",
        h.comment ?? "",
      ]),
    ),
  ];
}

/** The partner pages' own links. */
function partnerLinks() {
  return el(
    "p",
    { class: "inline" },
    el("a", { href: "/console/partner" }, "By customer"),
    " · ",
    el("a", { href: "/console/partner/groups" }, "Customers and groups"),
    " · ",
    el("a", { href: "/console/partner/applications" }, "Applications across customers"),
    " · ",
    el("a", { href: "/console/partner/audit" }, "Audit"),
    " · ",
    el("a", { href: "/console/partner/access" }, "Analyst access"),
  );
}

async function partnerOverview(_match, params, me) {
  document.title = "Customers - Cairn";
  const groups = await api("GET", "/partner/groups");
  const group = params.get("group_id") || "";
  const query = new URLSearchParams({ sort: "kev_findings" });
  if (group) query.set("group_id", group);
  const overview = await api("GET", `/partner/overview?${query}`);
  const byGroup = el(
    "form",
    { class: "inline", method: "get", action: "/console/partner" },
    el(
      "label",
      {},
      "Group",
      el(
        "select",
        { name: "group_id" },
        el("option", { value: "" }, "All customers"),
        groups.map((g) => el("option", { value: g.id, selected: g.id === group }, g.name)),
      ),
    ),
    el("button", { type: "submit" }, "Show"),
  );
  byGroup.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new FormData(byGroup).get("group_id");
    go(chosen ? `/console/partner?group_id=${encodeURIComponent(chosen)}` : "/console/partner");
  });
  const lookup = el(
    "form",
    { class: "inline", role: "search" },
    field("CVE id", { name: "cve", required: true }),
    el("button", { type: "submit" }, "Who is exposed?"),
  );
  lookup.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`/console/partner/cves/${encodeURIComponent(new FormData(lookup).get("cve").trim())}`);
  });
  // An analyst nobody granted a customer yet would see empty tables.
  const unassigned =
    me.role === "partner_analyst" && !overview.customers.length
      ? el("p", { class: "warning", role: "status" }, "You reach no customer yet: a partner admin grants analysts their customers under Analyst access.")
      : null;
  return [
    el("h1", {}, "Customers"),
    partnerLinks(),
    unassigned,
    byGroup,
    figures([
      ["Customers", overview.customers.length],
      ["Devices", overview.devices],
      ["Open findings", overview.totals.open_findings],
      ["KEV findings", overview.totals.kev_findings],
    ]),
    el("h2", {}, "Exposure to one CVE"),
    lookup,
    el("h2", {}, "By customer"),
    table(
      [
        ["Customer"],
        ["Devices", "num"],
        ["Critical", "num"],
        ["High", "num"],
        ["KEV", "num"],
        ["High EPSS", "num"],
        ["Oldest KEV (days)", "num"],
        ["Overdue", "num"],
        ["Fixed on time (30 d)", "num"],
        ["Data"],
      ],
      overview.customers.map((c) => [
        el("span", {}, el("a", { href: `/console/partner/customers/${encodeURIComponent(c.customer_id)}` }, c.name), " ", actButton(c)),
        c.devices,
        c.critical,
        c.high,
        c.kev_findings,
        c.high_epss_findings,
        c.oldest_open_kev_days ?? "",
        c.sla.overdue ? badge("sla", "overdue", String(c.sla.overdue)) : "0",
        c.sla.compliance_percent === null || c.sla.compliance_percent === undefined ? "–" : `${c.sla.compliance_percent} %`,
        c.freshness.replaceAll("_", " "),
      ]),
    ),
  ];
}

/** One customer: its figures, syncs and groups, and the way in. */
async function partnerCustomer([, id]) {
  const [customer, overview, groups] = await Promise.all([
    api("GET", `/partner/customers/${encodeURIComponent(id)}`),
    api("GET", "/partner/overview"),
    api("GET", "/partner/groups"),
  ]);
  document.title = `${customer.name} - Cairn`;
  const row = overview.customers.find((c) => c.customer_id === customer.id);
  const inGroups = groups.filter((g) => customer.group_ids.includes(g.id));
  return [
    el("h1", {}, customer.name),
    partnerLinks(),
    el("p", {}, actButton({ customer_id: customer.id, name: customer.name }), " ", el("a", { href: `/console/partner/audit?customer_id=${encodeURIComponent(customer.id)}` }, "Writes made in it")),
    row
      ? figures([
          ["Devices", row.devices],
          ["Open findings", row.open_findings],
          ["Critical", row.critical],
          ["KEV findings", row.kev_findings],
          ["Overdue", row.sla.overdue],
        ])
      : null,
    el("h2", {}, "Data"),
    el("p", {}, row && row.last_data_at ? ["Inventory last rebuilt ", moment(row.last_data_at), ` (${row.freshness.replaceAll("_", " ")}).`] : "No data yet: no sync or upload has landed."),
    table(
      [["Area"], ["Last successful sync"]],
      (row ? row.syncs : []).map((s) => [s.area.toUpperCase(), moment(s.last_success_at)]),
    ),
    el("h2", {}, "Groups"),
    inGroups.length
      ? el("ul", {}, inGroups.map((g) => el("li", {}, el("a", { href: `/console/partner?group_id=${encodeURIComponent(g.id)}` }, g.name))))
      : el("p", { class: "muted" }, "In no group."),
    el("p", { class: "muted" }, `Time zone ${customer.timezone}; ${customer.member_count} of its own ${customer.member_count === 1 ? "user" : "users"}; a customer since `, moment(customer.created_at), "."),
  ];
}

/** Which customers each partner analyst reaches, set by a partner admin. */
async function partnerAccess() {
  document.title = "Analyst access - Cairn";
  const [analysts, customers, groups] = await Promise.all([
    api("GET", "/partner/access"),
    api("GET", "/partner/customers"),
    api("GET", "/partner/groups"),
  ]);
  const forms = analysts.map((analyst) => {
    const { access } = analyst;
    const box = (name, value, label, checked) =>
      el("label", { class: "check" }, el("input", { type: "checkbox", name, value, checked }), label);
    const form = el(
      "form",
      { class: "stack wide", "aria-label": `Access of ${analyst.email}` },
      el(
        "fieldset",
        {},
        el("legend", {}, analyst.email),
        box("all_customers", "yes", "Every customer, now and later", access.all_customers),
        el("p", { class: "muted" }, "Or these customers:"),
        customers.length ? customers.map((c) => box("customer_ids", c.id, c.name, access.customer_ids.includes(c.id))) : el("p", { class: "muted" }, "No customers yet."),
        el("p", { class: "muted" }, "And the customers of these groups, as the groups change:"),
        groups.length ? groups.map((g) => box("group_ids", g.id, g.name, access.group_ids.includes(g.id))) : el("p", { class: "muted" }, "No groups yet."),
      ),
      el("button", { type: "submit" }, `Save the access of ${analyst.email}`),
    );
    return submits(form, (_fields, data) =>
      api("PUT", `/partner/access/${encodeURIComponent(analyst.user_id)}`, {
        all_customers: data.get("all_customers") === "yes",
        customer_ids: data.getAll("customer_ids"),
        group_ids: data.getAll("group_ids"),
      }),
    );
  });
  return [
    el("h1", {}, "Analyst access"),
    partnerLinks(),
    el("p", {}, "A partner analyst works only in the customers granted here; a change takes effect on the analyst's next request."),
    forms.length ? forms : el("p", { class: "muted" }, "No partner analysts yet: invite one with the role partner analyst under Members."),
  ];
}

/** Act in a customer: the session itself switches to it. */
function actButton(customer) {
  const button = el("button", { type: "button", "aria-label": `Act in ${customer.name}` }, "Act in");
  button.addEventListener("click", async () => {
    await api("POST", "/auth/act-as", { customer_id: customer.customer_id });
    go("/console/");
  });
  return button;
}

/** Customers (added, renamed away, removed) and groups of them. */
async function partnerGroups() {
  document.title = "Customers and groups - Cairn";
  const [customers, groups] = await Promise.all([api("GET", "/partner/customers"), api("GET", "/partner/groups")]);
  const names = new Map(customers.map((c) => [c.id, c.name]));
  const addCustomer = el(
    "form",
    { class: "inline", "aria-label": "Add a customer" },
    field("Customer name", { name: "name", required: true }),
    el("button", { type: "submit" }, "Add customer"),
  );
  submits(addCustomer, (data) => api("POST", "/partner/customers", data));
  const addGroup = el(
    "form",
    { class: "stack", "aria-label": "Create a group" },
    field("Group name", { name: "name", required: true }),
    el(
      "fieldset",
      {},
      el("legend", {}, "Customers in it"),
      customers.map((c) => el("label", { class: "check" }, el("input", { type: "checkbox", name: "customer_ids", value: c.id }), c.name)),
    ),
    el("button", { type: "submit" }, "Create group"),
  );
  submits(addGroup, (data, all) => api("POST", "/partner/groups", { name: data.name, customer_ids: all.getAll("customer_ids") }));
  const removeGroup = (g) =>
    el(
      "button",
      {
        type: "button",
        class: "quiet",
        "aria-label": `Delete the group ${g.name}`,
        onclick: async () => {
          await api("DELETE", `/partner/groups/${g.id}`);
          render();
        },
      },
      "Delete",
    );
  return [
    el("h1", {}, "Customers and groups"),
    partnerLinks(),
    el("h2", {}, "Customers"),
    table(
      [["Customer"], ["Members", "num"], ["Groups"], ["Added"]],
      customers.map((c) => [
        c.name,
        c.member_count,
        c.group_ids.map((id) => groups.find((g) => g.id === id)?.name ?? "").join(", "),
        moment(c.created_at),
      ]),
    ),
    addCustomer,
    el("h2", {}, "Groups"),
    table(
      [["Group"], ["Customers"], [""]],
      groups.map((g) => [
        el("a", { href: `/console/partner?group_id=${encodeURIComponent(g.id)}` }, g.name),
        g.customer_ids.map((id) => names.get(id) ?? id).join(", "),
        removeGroup(g),
      ]),
    ),
    addGroup,
  ];
}

/** An application's versions in every customer reached. */
async function partnerApplications(_match, params) {
  document.title = "Applications across customers - Cairn";
  const name = params.get("name") || "";
  const form = el(
    "form",
    { class: "inline", role: "search" },
    field("Application name contains", { name: "name", value: name, required: true, minlength: 2 }),
    el("button", { type: "submit" }, "Find"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`/console/partner/applications?name=${encodeURIComponent(new FormData(form).get("name").trim())}`);
  });
  const content = [el("h1", {}, "Applications across customers"), partnerLinks(), form];
  if (!name) return content;
  let found;
  try {
    found = await api("GET", `/partner/applications?name=${encodeURIComponent(name)}`);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 422) throw error;
    showError(form, error);
    return content;
  }
  const rows = found.customers.flatMap((c) =>
    c.applications.map((a) => [
      c.customer_name,
      a.name,
      a.device_count,
      a.newest_version ?? "",
      a.versions.map((v) => `${v.version ?? "no version"} (${v.count})`).join(", "),
    ]),
  );
  return [
    ...content,
    found.truncated ? el("p", { class: "muted" }, "More applications matched than are shown: narrow the name.") : null,
    table([["Customer"], ["Application"], ["Devices", "num"], ["Newest"], ["Versions (devices)"]], rows),
  ];
}

/** Writes the partner's users made, newest first, a page at a time. */
async function partnerAudit(_match, params) {
  document.title = "Audit - Cairn";
  const customers = await api("GET", "/partner/customers");
  const names = new Map(customers.map((c) => [c.id, c.name]));
  const query = new URLSearchParams();
  for (const key of ["customer_id", "skip"]) if (params.get(key)) query.set(key, params.get(key));
  const audit = await api("GET", `/partner/audit?${query}`);
  const filter = el(
    "form",
    { class: "inline" },
    el(
      "label",
      {},
      "Customer",
      el(
        "select",
        { name: "customer_id" },
        el("option", { value: "" }, "All"),
        customers.map((c) => el("option", { value: c.id, selected: c.id === params.get("customer_id") }, c.name)),
      ),
    ),
    el("button", { type: "submit" }, "Show"),
  );
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new FormData(filter).get("customer_id");
    go(chosen ? `/console/partner/audit?customer_id=${encodeURIComponent(chosen)}` : "/console/partner/audit");
  });
  let older = null;
  if (audit.skip + audit.items.length < audit.total) {
    const next = new URLSearchParams(query);
    next.set("skip", String(audit.skip + audit.items.length));
    older = el("nav", { class: "pager", "aria-label": "Pages" }, el("a", { href: `/console/partner/audit?${next}` }, "Older writes"));
  }
  return [
    el("h1", {}, "Audit"),
    partnerLinks(),
    filter,
    table(
      [["When"], ["Who"], ["Customer"], ["Write"], ["Status", "num"]],
      audit.items.map((a) => [
        moment(a.at),
        a.user_email,
        a.customer_id ? (names.get(a.customer_id) ?? a.customer_id) : "(partner)",
        [a.method, a.path].filter(Boolean).join(" "),
        a.status,
      ]),
    ),
    older,
  ];
}

async function partnerCve([, raw]) {
  const id = decodeURIComponent(raw);
  document.title = `${id} across customers - Cairn`;
  const result = await api("GET", `/partner/cves/${encodeURIComponent(id)}`);
  const rows = result.customers.flatMap((c) =>
    c.findings.map((f) => [c.name, f.device_name, f.application_name, f.version, f.fix_version ?? ""]),
  );
  return [
    el("h1", {}, `${id} across customers`),
    el("p", {}, `${result.customers_exposed} of ${result.customers_checked} customers exposed, ${result.devices_exposed} devices.`),
    table([["Customer"], ["Device"], ["Application"], ["Version"], ["Fixed in"]], rows),
  ];
}


const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function uploads() {
  document.title = "Uploads - Cairn";
  const sources = await api("GET", "/csv-sources/");
  const status = el("div", { "aria-live": "polite", id: "upload-status" });
  const fileInput = el("input", { type: "file", name: "file", accept: ".csv,.xlsx,.xls,.txt", required: true });
  const drop = el(
    "label",
    { class: "drop" },
    "CSV or Excel file (choose one, or drop it here)",
    fileInput,
  );
  drop.addEventListener("dragover", (event) => event.preventDefault());
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    if (event.dataTransfer.files.length) fileInput.files = event.dataTransfer.files;
  });
  const form = el(
    "form",
    { class: "stack" },
    el(
      "label",
      {},
      "Kind of file",
      // The software inventory first: the upload most made.
      el("select", { name: "source" }, sources.map((s) => el("option", { value: s.key, selected: s.key === "software-inventory" }, s.name))),
    ),
    drop,
    el("button", { type: "submit" }, "Upload"),
  );
  // What an upload replaces, said before it does.
  const warning = el("p", { class: "warning", id: "replace-warning" });
  const sourceSelect = form.querySelector("select[name=source]");
  const warn = () => {
    const chosen = sources.find((s) => s.key === sourceSelect.value);
    const held = chosen && chosen.stats ? chosen.stats : null;
    warning.replaceChildren(
      held && held.rows
        ? `A successful upload replaces what ${chosen.name} holds now (${held.rows} rows on ${held.devices} devices, from ${held.uploads} uploads): a file of 2 devices leaves 2 devices. A failed one changes nothing.`
        : `${chosen ? chosen.name : "This kind of file"} holds nothing yet; a successful upload becomes its data.`,
    );
  };
  sourceSelect.addEventListener("change", warn);
  warn();
  form.insertBefore(warning, form.querySelector("button[type=submit]"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const source = new FormData(form).get("source");
    if (!fileInput.files.length) return showError(form, new ApiError(422, { detail: "Choose a file first.", field: "file" }));
    const body = new FormData();
    body.append("file", fileInput.files[0]);
    const response = await fetch(`/api/v1/csv-sources/${encodeURIComponent(source)}/upload`, {
      method: "POST",
      credentials: "same-origin",
      body,
    });
    const data = await response.json().catch(() => null);
    if (!response.ok) return showError(form, new ApiError(response.status, data));
    // Follow the parse until it ends.
    let upload = data;
    while (!ended(upload.status)) {
      status.replaceChildren(el("p", {}, `${upload.filename}: ${upload.status}, ${upload.rows_read} rows read`));
      await sleep(400);
      upload = await api("GET", `/csv-sources/${encodeURIComponent(source)}/uploads/${upload.id}`);
    }
    status.replaceChildren(
      el("p", { class: upload.status === "success" ? "" : "error" }, `${upload.filename}: ${statusWords(upload.status)}`),
      figures([
        ["Rows read", upload.rows_read],
        ["Rows imported", upload.rows_imported],
        ["Rows rejected", upload.rows_rejected],
        ["Duplicates", upload.duplicates],
      ]),
      upload.error ? el("p", { class: "error" }, upload.error) : null,
      ...rejections(upload),
      el("h2", {}, "How full each column is"),
      table(
        [["Column"], ["Rows with a value", "num"]],
        Object.entries(upload.fill_rate || {}).map(([column, rate]) => [column, `${Math.round(rate * 100)} %`]),
      ),
    );
  });
  // Every kind's past uploads, newest first, each with its rejected rows.
  const pasts = await Promise.all(
    sources.map(async (s) => [s, await api("GET", `/csv-sources/${encodeURIComponent(s.key)}/uploads?limit=20`)]),
  );
  const history = pasts.flatMap(([s, page]) => (page.items || []).map((u) => [s, u]));
  history.sort(([, a], [, b]) => (a.created_at < b.created_at ? 1 : -1));
  return [
    el("h1", {}, "Uploads"),
    form,
    el("h2", {}, "Progress"),
    status,
    el("h2", {}, "Past uploads"),
    table(
      [["When"], ["Kind"], ["File"], ["Result"], ["Rows imported", "num"], ["Rows rejected", "num"], ["Why"]],
      history.map(([s, u]) => [
        moment(u.created_at),
        s.name,
        u.filename,
        statusWords(u.status),
        u.rows_imported,
        u.rows_rejected,
        u.error ?? (u.rejections || []).slice(0, 3).map((r) => `row ${r.row}: ${r.reason}`).join("; "),
      ]),
    ),
  ];
}

/** An upload's rejected rows and why, as far as the service kept them. */
function rejections(upload) {
  const rows = upload.rejections || [];
  if (!rows.length) return [];
  return [
    el("h2", {}, "Rejected rows"),
    table([["Row", "num"], ["Why"]], rows.map((r) => [r.row, r.reason])),
  ];
}

const REPORT_TYPES = ["executive_summary", "vulnerabilities", "software_inventory", "version_compliance", "customer_review", "exception_register"];

/** A JSON editor for one setting: a textarea, Save, and what the save said. */
function jsonForm(label, value, save) {
  const status = el("p", { role: "status" });
  const form = el(
    "form",
    { class: "stack wide" },
    el("label", {}, label, el("textarea", { name: "json", rows: 10, spellcheck: "false" }, JSON.stringify(value, null, 2))),
    el("button", { type: "submit" }, `Save the ${label.toLowerCase()}`),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let body;
    try {
      body = JSON.parse(new FormData(form).get("json"));
    } catch (error) {
      showError(form, new ApiError(422, { detail: `This is not JSON: ${error.message}` }));
      return;
    }
    try {
      status.textContent = await save(body);
    } catch (error) {
      showError(form, error);
    }
  });
  return form;
}

async function sla(_match, params) {
  document.title = "SLA - Cairn";
  const state = params.get("state") || "";
  const standing = await api("GET", "/sla/standing?days=30");
  const applied = await api("GET", "/sla/policy");
  const findings = await api("GET", `/sla/findings?limit=200${state ? `&state=${encodeURIComponent(state)}` : ""}`);
  const { items: exceptions } = await api("GET", "/sla/exceptions?limit=500");
  const rules = await api("GET", "/sla/tier-rules");
  const filter = el(
    "form",
    { class: "inline" },
    el(
      "label",
      {},
      "SLA state",
      el(
        "select",
        { name: "state" },
        [["", "any"], ["overdue", "overdue"], ["due_soon", "due soon"], ["within", "within SLA"], ["excepted", "excepted"]].map(([value, text]) =>
          el("option", { value, selected: value === state }, text),
        ),
      ),
    ),
    el("button", { type: "submit" }, "Show"),
  );
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new FormData(filter).get("state");
    go(chosen ? `/console/sla?state=${encodeURIComponent(chosen)}` : "/console/sla");
  });
  const decisions = el("div", { "aria-live": "polite" });
  const decide = (exception, approve) => {
    const verb = approve ? "Approve" : "Reject";
    const button = el("button", { type: "button", class: "quiet", "aria-label": `${verb} the exception for ${exception.cve_id}` }, verb);
    button.addEventListener("click", async () => {
      try {
        await api("POST", `/sla/exceptions/${encodeURIComponent(exception.id)}/decision`, { approve });
        render();
      } catch (error) {
        decisions.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      }
    });
    return button;
  };
  const source = applied.source.scope === "built_in" ? "built in" : `set as ${applied.source.scope.replaceAll("_", " ")}`;
  return [
    el("h1", {}, "Remediation SLA"),
    figures([
      ["Overdue", standing.overdue],
      ["Due soon", standing.due_soon],
      ["Within SLA", standing.within],
      ["Excepted", standing.excepted],
      ["Fixed on time (30 d)", standing.compliance_percent === null ? "–" : `${standing.compliance_percent} %`],
    ]),
    el("h2", {}, "Open findings against their due dates"),
    filter,
    table(
      [["Device"], ["Tier"], ["Application"], ["Version"], ["CVE"], ["Severity"], ["Due"], ["SLA"]],
      findings.items.map((f) => [
        f.device_name,
        f.tier,
        f.application_name,
        f.version,
        el("a", { href: `/console/cves/${encodeURIComponent(f.cve_id)}` }, f.cve_id),
        badge("sev", f.severity),
        f.due_at ? new Date(f.due_at).toISOString().slice(0, 10) : "",
        slaBadge(f),
      ]),
    ),
    el("h2", {}, "Exceptions"),
    el("p", { class: "muted" }, "Request one from a CVE's page. A pending one is decided here by an admin other than its requester."),
    decisions,
    table(
      [["CVE"], ["Devices"], ["Status"], ["Reason"], ["Requested by"], ["Expires"], ["Decision"]],
      exceptions.map((e) => [
        el("a", { href: `/console/cves/${encodeURIComponent(e.cve_id)}` }, e.cve_id),
        e.devices.length ? e.devices.join(", ") : "every device",
        badge("exception", e.status),
        e.reason,
        e.requested_by,
        new Date(e.expires_at).toISOString().slice(0, 10),
        e.status === "pending"
          ? el("span", { class: "inline" }, decide(e, true), " ", decide(e, false))
          : [e.decided_by ?? "", e.decision_comment ? `: ${e.decision_comment}` : ""].join(""),
      ]),
    ),
    el("h2", {}, "Policy"),
    el("p", {}, `${applied.policy.name} (${source}). An admin saves the organization's default here.`),
    jsonForm("Default policy", applied.policy, async (policy) => {
      const saved = await api("PUT", "/sla/policies/default", policy);
      return `Saved: ${saved.moved} due dates moved.`;
    }),
    el("h2", {}, "Device tiers"),
    figures(rules.assets_by_tier.map((t) => [`${t.tier} devices`, t.assets])),
    jsonForm("Tier rules", rules.rules, async (list) => {
      const saved = await api("PUT", "/sla/tier-rules", { rules: list });
      return `Saved: ${saved.assets_by_tier.map((t) => `${t.assets} ${t.tier}`).join(", ")}.`;
    }),
  ];
}

async function reports() {
  document.title = "Reports - Cairn";
  const list = await api("GET", "/reports/?limit=50");
  const form = el(
    "form",
    { class: "inline" },
    el("label", {}, "Report", el("select", { name: "report_type" }, REPORT_TYPES.map((t) => el("option", { value: t }, t.replaceAll("_", " "))))),
    el("label", {}, "Format", el("select", { name: "format" }, ["pdf", "xlsx", "csv"].map((f) => el("option", { value: f }, f)))),
    el("button", { type: "submit" }, "Generate"),
  );
  submits(form, (data) => api("POST", "/reports/generate", data));
  const pending = list.items.some((r) => r.status === "queued" || r.status === "running");
  if (pending) setTimeout(() => location.pathname === "/console/reports" && render(), 1000);
  return [
    el("h1", {}, "Reports"),
    form,
    table(
      [["Report"], ["Format"], ["Status"], ["Asked for"], ["File"]],
      list.items.map((r) => [
        r.title,
        r.format,
        r.error ? `${statusWords(r.status)}: ${r.error}` : statusWords(r.status),
        moment(r.created_at),
        r.status === "success"
          ? el("a", { href: `/api/v1/reports/${r.id}/download`, download: r.file_name }, `Download ${r.file_name}`)
          : "",
      ]),
    ),
  ];
}

async function jobs(_match, params) {
  document.title = "Jobs - Cairn";
  const limit = 50;
  const page = pageNumber(params);
  const result = await api("GET", `/jobs?limit=${limit}&skip=${(page - 1) * limit}`);
  return [
    el("h1", {}, "Jobs"),
    table(
      [["Kind"], ["Status"], ["Progress"], ["Started"], ["Error"]],
      result.items.map((j) => [
        j.kind.replaceAll("_", " "),
        statusWords(j.status),
        j.percent === null || j.percent === undefined ? (j.progress && j.progress.phase) || "" : `${Math.round(j.percent)} %`,
        moment(j.started_at ?? j.created_at),
        j.error ?? "",
      ]),
    ),
    pager(page, params, result.total, limit),
  ];
}

/** The invite just created: its link is shown once, on the next drawing. */
let justInvited = null;

function inviteLink(created) {
  // The link's own path, so that it opens here even where the service's
  // public URL names another address.
  const path = new URL(created.accept_url, location.origin).pathname;
  return el(
    "p",
    { role: "status" },
    created.email_sent ? `Invite mailed to ${created.invite.email}. ` : `No mail was sent: pass this link on to ${created.invite.email}. `,
    el("a", { href: path, class: "invite-link" }, created.accept_url),
  );
}

async function members() {
  document.title = "Members - Cairn";
  const created = justInvited;
  justInvited = null;
  const people = await api("GET", "/tenant/members");
  const invites = await api("GET", "/invites").catch(() => []);
  const form = el(
    "form",
    { class: "inline" },
    field("Email", { name: "email", type: "email", required: true }),
    el("label", {}, "Role", el("select", { name: "role" }, ["member", "admin", "owner", "partner_admin", "partner_analyst"].map((r) => el("option", { value: r }, r.replaceAll("_", " "))))),
    el("button", { type: "submit" }, "Invite"),
  );
  submits(form, async (data) => {
    justInvited = await api("POST", "/invites", data);
  });
  const pending = (Array.isArray(invites) ? invites : invites.items || []).filter((i) => i.status === "pending");
  return [
    el("h1", {}, "Members"),
    table([["Email"], ["Name"], ["Role"], ["Joined"]], people.map((m) => [m.email, m.name ?? "", m.role.replaceAll("_", " "), moment(m.joined_at)])),
    el("h2", {}, "Invite someone"),
    form,
    created ? inviteLink(created) : null,
    el("h2", {}, "Pending invites"),
    table([["Email"], ["Role"], ["Expires"]], pending.map((i) => [i.email, i.role.replaceAll("_", " "), moment(i.expires_at)])),
  ];
}

async function integrations() {
  document.title = "Integrations - Cairn";
  const listing = await api("GET", "/integrations/");
  return [
    el("h1", {}, "Integrations"),
    table(
      [["Area"], ["Connectors"], ["Configured"]],
      listing.areas.map((a) => [
        el("a", { href: `/console/integrations/${encodeURIComponent(a.area)}` }, a.area),
        a.connectors.join(", "),
        a.configured ? `yes (${a.connector ?? a.connectors[0]})` : "no",
      ]),
    ),
  ];
}

/** One input per property of a connector's config schema. */
function schemaFields(descriptor, stored) {
  const schema = descriptor.config_schema || {};
  const required = new Set(schema.required || []);
  return Object.entries(schema.properties || {}).map(([name, prop]) => {
    const secret = descriptor.secret_fields.includes(name);
    const value = stored[name];
    const hintId = `hint-${name}`;
    const label = name.replaceAll("_", " ");
    let input;
    if (Array.isArray(prop.enum)) {
      input = el("select", { name }, prop.enum.map((v) => el("option", { value: v, selected: v === value }, v)));
    } else if (prop.type === "boolean") {
      input = el("input", { name, type: "checkbox", checked: value === true });
    } else if (prop.type === "integer" || prop.type === "number") {
      input = el("input", { name, type: "number", value: value ?? "", "data-kind": "number" });
    } else if (prop.type === "array") {
      input = el("input", { name, value: Array.isArray(value) ? value.join(", ") : "", "data-kind": "list" });
    } else if (secret) {
      // Secrets are write-only: a stored one is never sent back here.
      input = el("input", {
        name,
        type: "password",
        autocomplete: "new-password",
        placeholder: value ? "stored (leave empty to keep)" : "",
        "data-kind": "secret",
      });
    } else {
      input = el("input", { name, value: value ?? "" });
    }
    if (required.has(name) && !(secret && value)) input.setAttribute("required", "");
    const hint = prop.description || (prop.type === "array" ? "Comma-separated" : null);
    if (hint) input.setAttribute("aria-describedby", hintId);
    return el("label", {}, `${label}${required.has(name) ? " (required)" : ""}`, input, hint ? el("span", { id: hintId, class: "muted" }, hint) : null);
  });
}

function configOf(form, descriptor) {
  const out = {};
  for (const input of form.querySelectorAll("input, select")) {
    if (!input.name || input.name === "connector") continue;
    const kind = input.dataset.kind;
    if (input.type === "checkbox") out[input.name] = input.checked;
    else if (kind === "secret") out[input.name] = input.value || "********";
    else if (!input.value.trim()) continue;
    else if (kind === "number") out[input.name] = Number(input.value);
    else if (kind === "list") out[input.name] = input.value.split(",").map((v) => v.trim()).filter(Boolean);
    else out[input.name] = input.value.trim();
  }
  out.connector = descriptor.id;
  return out;
}

async function integration([, raw]) {
  const area = decodeURIComponent(raw);
  document.title = `${area} - Cairn`;
  const listing = await api("GET", "/integrations/");
  const config = await api("GET", `/${encodeURIComponent(area)}/config`);
  const connectors = listing.connectors.map((c) => c.descriptor).filter((d) => d.area === area);
  if (!connectors.length) return [el("h1", {}, "Not found"), el("p", {}, `No connector serves ${area}.`)];
  const descriptor = connectors.find((d) => d.id === config.connector) || connectors[0];
  const status = el("div", { "aria-live": "polite", id: "integration-status" });
  const form = el(
    "form",
    { class: "stack" },
    el("p", { class: "muted" }, `${descriptor.name} ${descriptor.version}`),
    config.shared_by_partner ? el("p", {}, "This config is your partner's, shared with you.") : null,
    schemaFields(descriptor, config.config || {}),
    el("button", { type: "submit" }, "Save"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("POST", `/${encodeURIComponent(area)}/config`, configOf(form, descriptor));
      status.replaceChildren(el("p", {}, "Saved."));
    } catch (error) {
      showError(form, error);
    }
  });
  const test = el("button", { type: "button" }, "Test connection");
  test.addEventListener("click", async () => {
    try {
      await api("POST", `/${encodeURIComponent(area)}/test-connection`);
      status.replaceChildren(el("p", {}, "Connection works."));
    } catch (error) {
      status.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    }
  });
  const sync = el("button", { type: "button" }, "Sync now");
  sync.addEventListener("click", async () => {
    try {
      await api("POST", `/${encodeURIComponent(area)}/sync`);
      for (;;) {
        const state = await api("GET", `/${encodeURIComponent(area)}/sync-status`);
        const job = state.current;
        const progress = job && job.progress ? `${job.progress.phase ?? ""} ${job.progress.done ?? ""}${job.progress.total ? ` of ${job.progress.total}` : ""} ${job.progress.unit ?? ""}` : "";
        status.replaceChildren(el("p", {}, `Sync ${job ? statusWords(job.status) : "queued"} ${progress}`.trim()));
        if (job && ended(job.status)) {
          if (job.error) status.append(el("p", { class: "error", role: "alert" }, job.error));
          break;
        }
        await sleep(400);
      }
    } catch (error) {
      status.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    }
  });
  return [el("h1", {}, `Integration: ${area}`), form, el("p", { class: "inline" }, test, " ", sync), status];
}

// ---- routing -----------------------------------------------------------

const ROUTES = [
  [/^\/console\/?$/, home, "Overview"],
  [/^\/console\/login$/, (m, p, me) => signIn(m, p, me, false), null, true],
  [/^\/console\/register$/, (m, p, me) => signIn(m, p, me, true), null, true],
  [/^\/console\/invites\/([^/]+)$/, acceptInvite, null, true],
  [/^\/console\/applications$/, applications, "Applications"],
  [/^\/console\/devices$/, devices, "Devices"],
  [/^\/console\/devices\/([^/]+)$/, device, null],
  [/^\/console\/vulnerabilities$/, vulnerabilities, "Vulnerabilities"],
  [/^\/console\/sla$/, sla, "SLA"],
  [/^\/console\/automation$/, automation, "Automation"],
  [/^\/console\/remediation$/, remediationPlans, "Remediation"],
  [/^\/console\/remediation\/([^/]+)$/, remediationPlan, null],
  [/^\/console\/research$/, research, "Research"],
  [/^\/console\/cves\/([^/]+)$/, cve, null],
  [/^\/console\/integrations$/, integrations, "Integrations"],
  [/^\/console\/integrations\/([^/]+)$/, integration, null],
  [/^\/console\/uploads$/, uploads, "Uploads"],
  [/^\/console\/reports$/, reports, "Reports"],
  [/^\/console\/jobs$/, jobs, "Jobs"],
  [/^\/console\/members$/, members, "Members"],
  [/^\/console\/partner$/, partnerOverview, "Customers"],
  [/^\/console\/partner\/cves\/([^/]+)$/, partnerCve, null],
  [/^\/console\/partner\/groups$/, partnerGroups, null],
  [/^\/console\/partner\/applications$/, partnerApplications, null],
  [/^\/console\/partner\/audit$/, partnerAudit, null],
  [/^\/console\/partner\/access$/, partnerAccess, null],
  [/^\/console\/partner\/customers\/([^/]+)$/, partnerCustomer, null],
];

const TRIGGER_CHOICES = [
  ["kev_added", "a finding's CVE is in KEV"],
  ["new_finding", "a new finding"],
  ["epss_crossed", "a finding's EPSS reaches the threshold"],
  ["due_soon", "a finding becomes due soon"],
  ["overdue", "a finding becomes overdue"],
  ["digest", "a digest of matching findings"],
  ["exception_requested", "an exception is asked for"],
  ["exception_approved", "an exception is approved"],
  ["exception_expiring", "an exception is about to expire"],
  ["sync_failed", "a sync fails"],
  ["upload_failed", "an upload fails"],
  ["remediation_failed", "a remediation fails or is disproved by the inventory"],
  ["subscription_match", "a followed vendor or product gets a CVE"],
];

/** The rule the editor's form says; fields left empty are left out. */
function ruleFromForm(form, deviceRules) {
  const value = (name) => form.elements[name].value.trim();
  const number = (name) => (value(name) === "" ? undefined : Number(value(name)));
  const kind = value("trigger");
  const trigger = { kind };
  if (kind === "epss_crossed") trigger.threshold = number("threshold") ?? 0.1;
  if (kind === "digest") trigger.every = value("every");
  if (kind === "exception_expiring") trigger.days = number("days") ?? 7;
  const conditions = {};
  if (value("severity")) conditions.severity_at_least = value("severity");
  if (value("kev")) conditions.kev = value("kev") === "true";
  if (number("epss_min") !== undefined) conditions.epss_at_least = number("epss_min");
  const tiers = [...form.querySelectorAll("[name=tier]:checked")].map((box) => box.value);
  if (tiers.length) conditions.tiers = tiers;
  for (const key of ["vendor", "product"]) if (value(key)) conditions[key] = value(key);
  if (number("open_days") !== undefined) conditions.open_days_at_least = number("open_days");
  const chosen = [...deviceRules.children].map(ruleOf);
  if (chosen.length) {
    // The device search's own query object (as the devices page sends it).
    const rules = chosen.map((r) => ({ kind: "rule", field: r.field, operator: r.operator, ...(["is_empty", "is_not_empty"].includes(r.operator) ? {} : { value: r.value }) }));
    conditions.devices = { kind: "group", combinator: value("combinator"), rules };
  }
  const actions = [];
  if (value("email_to")) actions.push({ type: "email", to: value("email_to").split(",").map((a) => a.trim()).filter(Boolean) });
  if (value("webhook_url")) {
    const hook = { type: "webhook", url: value("webhook_url"), format: value("webhook_format") };
    if (value("webhook_secret")) hook.secret = value("webhook_secret");
    actions.push(hook);
  }
  if (number("company_id") !== undefined) {
    const ticket = { type: "ticket", company_id: number("company_id") };
    if (number("board_id") !== undefined) ticket.board_id = number("board_id");
    if (number("close_status_id") !== undefined) ticket.close_status_id = number("close_status_id");
    actions.push(ticket);
  }
  const rule = { name: value("name"), trigger, actions, include_existing: form.elements.include_existing.checked };
  if (Object.keys(conditions).length) rule.conditions = conditions;
  return rule;
}

/** The rule editor: when, which findings (the device search's rules
 * among them), what to do; a dry run and a save. */
function ruleEditor(preview) {
  const options = (list, chosen) => list.map(([value, label]) => el("option", { value, selected: value === chosen }, label));
  const deviceRules = el("div", { class: "stack" });
  const addDeviceRule = el(
    "button",
    {
      type: "button",
      class: "quiet",
      onclick: () => {
        const row = ruleRow({ field: "device_name", operator: "contains" }, deviceRules.children.length + 1);
        deviceRules.append(row);
        row.querySelector("select").focus();
      },
    },
    "Add a device rule",
  );
  const tiers = ["critical", "high", "standard", "low"].map((tier) =>
    el("label", { class: "inline" }, el("input", { type: "checkbox", name: "tier", value: tier }), `${tier} devices`),
  );
  const status = el("p", { role: "status" });
  const form = el(
    "form",
    { class: "stack wide" },
    field("Rule name", { name: "name", value: "KEV findings to the SOC", required: true }),
    el(
      "fieldset",
      {},
      el("legend", {}, "When"),
      el("label", {}, "Trigger", el("select", { name: "trigger" }, options(TRIGGER_CHOICES, "kev_added"))),
      el(
        "div",
        { class: "inline" },
        field("EPSS threshold (for EPSS)", { name: "threshold", inputmode: "decimal", placeholder: "0.1" }),
        el("label", {}, "Digest every", el("select", { name: "every" }, options([["daily", "day"], ["weekly", "week"]], "daily"))),
        field("Days before expiry (for exceptions)", { name: "days", inputmode: "numeric", placeholder: "7" }),
      ),
      el("label", { class: "inline" }, el("input", { type: "checkbox", name: "include_existing" }), "Also act on what already matches"),
    ),
    el(
      "fieldset",
      {},
      el("legend", {}, "Only findings that"),
      el(
        "div",
        { class: "inline" },
        el("label", {}, "Severity at least", el("select", { name: "severity" }, options([["", "any"], ["low", "low"], ["medium", "medium"], ["high", "high"], ["critical", "critical"]], "high"))),
        el("label", {}, "In KEV", el("select", { name: "kev" }, options([["", "either"], ["true", "yes"], ["false", "no"]], ""))),
        field("EPSS at least", { name: "epss_min", inputmode: "decimal" }),
        field("Open at least (days)", { name: "open_days", inputmode: "numeric" }),
      ),
      el("div", { class: "inline" }, field("Vendor", { name: "vendor", placeholder: "google" }), field("Product", { name: "product", placeholder: "chrome" })),
      el("div", { class: "inline", role: "group", "aria-label": "Device tiers" }, ...tiers),
      el("label", {}, "Devices matching", el("select", { name: "combinator" }, options(COMBINATORS, "and"))),
      deviceRules,
      el("p", {}, addDeviceRule),
    ),
    el(
      "fieldset",
      {},
      el("legend", {}, "Then"),
      field("E-mail to (commas)", { name: "email_to", value: "soc@example.com" }),
      el(
        "div",
        { class: "inline" },
        field("Webhook URL", { name: "webhook_url", type: "url" }),
        el("label", {}, "Webhook format", el("select", { name: "webhook_format" }, options([["json", "Cairn (signed)"], ["slack", "Slack"], ["teams", "Microsoft Teams"]], "json"))),
        field("Webhook secret", { name: "webhook_secret", type: "password", autocomplete: "off" }),
      ),
      el(
        "div",
        { class: "inline" },
        field("PSA company id", { name: "company_id", inputmode: "numeric" }),
        field("Board id", { name: "board_id", inputmode: "numeric" }),
        field("Closed status id", { name: "close_status_id", inputmode: "numeric" }),
      ),
    ),
    el("p", { class: "inline" }, el("button", { type: "submit" }, "Save the rule"), " ", el("button", { type: "button", class: "quiet", name: "dry_run" }, "Dry run")),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const saved = await api("POST", "/automation/rules", ruleFromForm(form, deviceRules));
      status.textContent = `Saved "${saved.name}".`;
      setTimeout(render, 0);
    } catch (error) {
      showError(form, error);
    }
  });
  form.elements.dry_run.addEventListener("click", async () => {
    clearErrors(form);
    try {
      // One plan per tenant the rule runs over (each customer, for a
      // partner's rule over its customers).
      const runs = await api("POST", "/automation/dry-run", ruleFromForm(form, deviceRules));
      const fired = runs.flatMap((run) => run.plan.fired);
      const events = runs.flatMap((run) => run.plan.events);
      const sends = runs.flatMap((run) => run.plan.deliveries.map((d) => `${d.action.replaceAll("_", " ")} to ${d.target}`));
      const what = events.length ? `${events.length} event(s)` : `${fired.length} finding(s)`;
      preview.replaceChildren(
        el("p", { role: "status" }, `Would fire for ${what}${sends.length ? ` and send: ${sends.join("; ")}` : " and send nothing"}. Nothing was sent.`),
        events.length
          ? table([["Event"]], events.slice(0, 20).map((e) => [e.summary]))
          : table(
              [["CVE"], ["Device"], ["Application"], ["Severity"], ["KEV"]],
              fired.slice(0, 20).map((f) => [
                el("a", { href: `/console/cves/${encodeURIComponent(f.cve_id)}` }, f.cve_id),
                el("a", { href: `/console/devices/${encodeURIComponent(f.device_name)}` }, f.device_name),
                `${f.application_name} ${f.version}`,
                badge("sev", f.severity),
                f.kev ? "yes" : "no",
              ]),
            ),
      );
    } catch (error) {
      showError(form, error);
    }
  });
  return form;
}

const TRIGGER_WORDS = {
  new_finding: "a new finding",
  kev_added: "a CVE in KEV",
  epss_crossed: "EPSS crossed",
  due_soon: "due soon",
  overdue: "overdue",
  digest: "digest",
  exception_requested: "an exception asked for",
  exception_approved: "an exception approved",
  exception_expiring: "an exception expiring",
  sync_failed: "a failed sync",
  upload_failed: "a failed upload",
  remediation_failed: "a failed remediation",
  subscription_match: "a followed product's CVE",
};

function triggerWords(trigger) {
  const words = TRIGGER_WORDS[trigger.kind] ?? trigger.kind;
  if (trigger.kind === "epss_crossed") return `${words} ${trigger.threshold}`;
  if (trigger.kind === "digest") return `${trigger.every} ${words}`;
  return words;
}

function actionWords(action) {
  if (action.type === "ticket") return `PSA ticket (company ${action.company_id})`;
  if (action.type === "email") return `e-mail to ${action.to.join(", ")}`;
  return `${action.format} webhook to ${new URL(action.url).host}`;
}

function when(ms) {
  return new Date(ms).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }) + " UTC";
}

/** An RFC 3339 moment as a person reads it, machine-readable underneath;
 * nothing for none. */
function moment(iso) {
  if (!iso) return "";
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : el("time", { datetime: iso }, when(ms));
}

// ---- remediation ---------------------------------------------------------

/** An item's state, as an analyst reads it. */
const REMEDIATION_STATES = {
  planned: "planned",
  skipped: "left out",
  starting: "starting",
  pending: "sent to the RMM",
  running: "running",
  awaiting_inventory: "reported done; waiting for the next inventory",
  fixed: "fixed: the inventory shows it",
  remediation_failed: "not fixed: the inventory still shows it",
  failed: "failed",
  cancelled: "cancelled",
};

function planCounts(counts) {
  const parts = [
    [counts.fixed, "fixed"],
    [counts.remediation_failed, "not fixed after a reported success"],
    [counts.failed, "failed"],
    [counts.in_progress + counts.awaiting_inventory, "under way"],
    [counts.planned, "planned"],
    [counts.skipped, "left out"],
  ];
  return parts.filter(([n]) => n > 0).map(([n, words]) => `${n} ${words}`).join(", ") || "nothing to do";
}

/** Plans, newest first, and a new plan from a CVE. */
async function remediationPlans() {
  document.title = "Remediation - Cairn";
  const page = await api("GET", "/remediation/plans?limit=50");
  const form = el(
    "form",
    { class: "stack" },
    field("CVE", { name: "cve_id", required: true, placeholder: "CVE-2023-2033" }),
    el("button", { type: "submit" }, "Plan a remediation"),
  );
  submits(form, async (data) => {
    const made = await api("POST", "/remediation/plans", { cve_id: data.cve_id.trim() });
    window.history.pushState(null, "", `/console/remediation/${encodeURIComponent(made.plan.id)}`);
  });
  return [
    el("h1", {}, "Remediation"),
    el("p", { class: "muted" }, "A plan sends nothing until an admin approves it. A device counts as fixed only when a later inventory shows the fixed version, whatever the RMM reported."),
    form,
    el("h2", {}, "Plans"),
    table(
      [["Plan"], ["Status"], ["Devices"], ["Made"]],
      page.items.map((p) => [
        el("a", { href: `/console/remediation/${encodeURIComponent(p.id)}` }, p.cve_id ?? "devices from a search"),
        p.status,
        planCounts(p.counts),
        `${when(Date.parse(p.created_at))} by ${p.created_by}`,
      ]),
    ),
  ];
}

/** One plan: its items, approval, and progress while it runs. */
async function remediationPlan([, raw]) {
  const id = decodeURIComponent(raw);
  const path = location.pathname;
  const view = await api("GET", `/remediation/plans/${encodeURIComponent(id)}`);
  const plan = view.plan;
  document.title = `Remediation ${plan.cve_id ?? ""} - Cairn`;
  const failed = el("div", { "aria-live": "polite" });
  const act = (verb, label) => {
    const button = el("button", { type: "button" }, label);
    button.addEventListener("click", async () => {
      try {
        await api("POST", `/remediation/plans/${encodeURIComponent(id)}/${verb}`);
        render();
      } catch (error) {
        failed.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      }
    });
    return button;
  };
  const live = ["approved", "running"].includes(plan.status) || plan.counts.in_progress + plan.counts.awaiting_inventory > 0;
  // Drawn again while the RMM works, as long as the page is still shown.
  if (live) setTimeout(() => location.pathname === path && render(), 1500);
  const c = plan.counts;
  return [
    el("h1", {}, `Remediation of ${plan.cve_id ?? "devices from a search"}`),
    el(
      "p",
      { class: "muted" },
      plan.status === "draft"
        ? `A draft: nothing has been sent. Approving it sends each planned update through ${plan.connector}.`
        : `${plan.status}${plan.approved_by ? `, approved by ${plan.approved_by}` : ""}.`,
    ),
    figures([
      ["Planned", c.planned],
      ["Left out", c.skipped],
      ["Under way", c.in_progress],
      ["Waiting for an inventory", c.awaiting_inventory],
      ["Fixed", c.fixed],
      ["Not fixed after a reported success", c.remediation_failed],
      ["Failed", c.failed],
    ]),
    el(
      "p",
      { class: "inline" },
      plan.status === "draft" ? act("approve", "Approve and send") : null,
      " ",
      ["draft", "approved", "running"].includes(plan.status) ? act("cancel", "Cancel the plan") : null,
    ),
    failed,
    table(
      [["Device"], ["Application"], ["Installed"], ["Target"], ["State"], ["Why, or what the RMM said"]],
      view.items.map((i) => [
        el("a", { href: `/console/devices/${encodeURIComponent(i.device_name)}` }, i.device_name),
        i.application_name,
        i.version,
        i.target_version ?? "–",
        REMEDIATION_STATES[i.state] ?? i.state,
        i.reason ?? i.upstream_report ?? "",
      ]),
    ),
  ];
}

async function automation() {
  document.title = "Automation - Cairn";
  const [rules, { items: log }, { items: deliveries }] = await Promise.all([
    api("GET", "/automation/rules"),
    api("GET", "/automation/log?limit=50"),
    api("GET", "/automation/deliveries?limit=50"),
  ]);
  const names = new Map(rules.map((r) => [r.id, r.name]));
  const preview = el("div", { "aria-live": "polite" });
  const editor = ruleEditor(preview);
  const runNow = el("button", { type: "button" }, "Run the rules now");
  runNow.addEventListener("click", async () => {
    await api("POST", "/automation/run");
    setTimeout(render, 1000);
  });
  const failed = el("div", { "aria-live": "polite" });
  // The rule as written back: what the API shows, less what it adds (a
  // webhook's secret is kept when left out).
  const toggle = (rule) => {
    const verb = rule.enabled ? "Disable" : "Enable";
    const button = el("button", { type: "button", class: "quiet", "aria-label": `${verb} ${rule.name}` }, verb);
    button.addEventListener("click", async () => {
      const { id, owner, created_at, updated_at, evaluated_at, ...input } = rule;
      try {
        await api("PUT", `/automation/rules/${encodeURIComponent(id)}`, { ...input, enabled: !rule.enabled });
        render();
      } catch (error) {
        failed.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      }
    });
    return button;
  };
  const remove = (rule) => {
    const button = el("button", { type: "button", class: "quiet", "aria-label": `Delete ${rule.name}` }, "Delete");
    button.addEventListener("click", async () => {
      try {
        await api("DELETE", `/automation/rules/${encodeURIComponent(rule.id)}`);
        render();
      } catch (error) {
        failed.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      }
    });
    return button;
  };
  const retry = (delivery) => {
    const button = el("button", { type: "button", class: "quiet", "aria-label": `Retry the ${delivery.action} to ${delivery.target}` }, "Retry");
    button.addEventListener("click", async () => {
      await api("POST", `/automation/deliveries/${encodeURIComponent(delivery.id)}/retry`);
      render();
    });
    return button;
  };
  return [
    el("h1", {}, "Automation"),
    el("p", { class: "muted" }, "When a finding starts to match a rule, its actions run once: a PSA ticket per CVE, one e-mail or webhook per run. A new rule leaves what already matches alone unless it includes existing findings."),
    el("h2", {}, "Rules"),
    rules.length
      ? table(
          [["Rule"], ["When"], ["Actions"], ["Enabled"], ["Last run"], [""]],
          rules.map((r) => [
            r.name,
            triggerWords(r.trigger),
            r.actions.map(actionWords).join("; "),
            r.enabled ? "yes" : "no",
            r.evaluated_at ? when(Date.parse(r.evaluated_at)) : "not yet",
            el("span", { class: "inline" }, toggle(r), " ", remove(r)),
          ]),
        )
      : el("p", {}, "No rule yet."),
    failed,
    runNow,
    el("h2", {}, "Write a rule"),
    el("p", { class: "muted" }, "Try it with a dry run before saving: it says what would go out and sends nothing. An admin saves."),
    editor,
    preview,
    el("h2", {}, "What the rules did"),
    log.length
      ? table(
          [["When"], ["Rule"], ["Outcome"], ["Why"], ["CVE"], ["Device"]],
          log.map((l) => [
            when(l.at),
            names.get(l.rule_id) ?? "(deleted rule)",
            badge("outcome", l.outcome),
            l.reason,
            l.cve_id ? el("a", { href: `/console/cves/${encodeURIComponent(l.cve_id)}` }, l.cve_id) : "",
            l.device_name ? el("a", { href: `/console/devices/${encodeURIComponent(l.device_name)}` }, l.device_name) : "",
          ]),
        )
      : el("p", {}, "Nothing yet."),
    el("h2", {}, "Deliveries"),
    deliveries.length
      ? table(
          [["Created"], ["Rule"], ["Action"], ["To"], ["Status"], ["Attempts"], ["Answer"], [""]],
          deliveries.map((d) => [
            when(Date.parse(d.created_at)),
            d.rule_name,
            d.action.replaceAll("_", " "),
            d.target,
            badge("delivery", d.status),
            String(d.attempts),
            d.answer ?? "",
            d.status === "dead" ? retry(d) : "",
          ]),
        )
      : el("p", {}, "Nothing sent yet."),
  ];
}

function go(url) {
  history.pushState(null, "", url);
  render();
}

function navigation(me) {
  nav.replaceChildren();
  if (!me) return;
  const links = [
    ["/console/", "Overview"],
    ["/console/applications", "Applications"],
    ["/console/devices", "Devices"],
    ["/console/vulnerabilities", "Vulnerabilities"],
    ["/console/sla", "SLA"],
    ["/console/automation", "Automation"],
    ["/console/remediation", "Remediation"],
    ["/console/research", "Research"],
    ["/console/integrations", "Integrations"],
    ["/console/uploads", "Uploads"],
    ["/console/reports", "Reports"],
    ["/console/jobs", "Jobs"],
    ["/console/members", "Members"],
    ["/console/partner", "Customers"],
  ];
  for (const [href, label] of links) {
    const current = location.pathname === href || (href !== "/console/" && location.pathname.startsWith(href));
    nav.append(el("li", {}, el("a", { href, "aria-current": current ? "page" : null }, label)));
  }
  if (me.acting) {
    const back = el("button", { type: "button" }, "Back to your organization");
    back.addEventListener("click", async () => {
      await api("DELETE", "/auth/act-as");
      go("/console/partner");
    });
    nav.append(el("li", {}, back));
  }
  const out = el("button", { type: "button" }, "Sign out");
  out.addEventListener("click", async () => {
    await api("POST", "/auth/logout").catch(() => null);
    go("/console/login");
  });
  nav.append(el("li", {}, out));
}

async function render() {
  // Set once the page is drawn: what a test (or a screen reader's user)
  // can wait for.
  main.removeAttribute("data-page");
  const path = location.pathname;
  const route = ROUTES.find(([pattern]) => pattern.test(path));
  let me = null;
  try {
    me = await api("GET", "/auth/me");
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error;
  }
  if (!me && !(route && route[3])) {
    history.replaceState(null, "", "/console/login");
    return render();
  }
  navigation(me);
  try {
    const content = route
      ? await route[1](path.match(route[0]), new URLSearchParams(location.search), me)
      : [el("h1", {}, "Not found"), el("p", {}, "No page here."), el("a", { href: "/console/" }, "Overview")];
    // A page's parts, without the ones it left out (null), never as text.
    main.replaceChildren(...[content].flat(Infinity).filter((part) => part !== null && part !== undefined && part !== false));
  } catch (error) {
    main.replaceChildren(el("h1", {}, "Something went wrong"), el("p", { class: "error", role: "alert" }, error.message));
  }
  main.setAttribute("data-page", location.pathname + location.search);
  main.focus();
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a");
  if (
    link &&
    link.origin === location.origin &&
    link.pathname.startsWith("/console") &&
    !link.hasAttribute("download") &&
    !(event.ctrlKey || event.metaKey || event.shiftKey || event.altKey)
  ) {
    event.preventDefault();
    go(link.href);
  }
});
// Each submission starts without the last one's errors (capturing: before
// the form's own handler).
document.addEventListener("submit", (event) => clearErrors(event.target), true);
window.addEventListener("popstate", render);
render();
