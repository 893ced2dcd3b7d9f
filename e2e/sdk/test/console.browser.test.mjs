// The operators' console (docs/console.md) in headless Chromium, against
// the real binary: an owner signs in with a link from `gatehouse console
// link`, creates an app, changes a setting (the flow preview follows over
// htmx, under the console's nonce CSP), finds a user by a pasted id and
// revokes the user's session, makes and revokes an API key, adds a
// member-role operator whose changes the server refuses, and reads the
// audit entries of all of it. Every page is checked with axe-core (no
// serious or critical violation), and no page breaks its CSP. With
// GATEHOUSE_CONSOLE_SHOTS=<dir> it saves the screenshots docs/console.md
// shows.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium } from "./harness.mjs";

gatehouseBin();
chromiumPath();

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const shotsDir = process.env.GATEHOUSE_CONSOLE_SHOTS || "";
const OWNER = "dev@localhost.localdomain"; // serve --dev's workspace owner
const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

let gh, browser, owner;
const cspViolations = [];

before(async () => {
  gh = await startGatehouse();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

/** context opens a browser context whose pages report CSP violations. */
async function context(opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...opts });
  ctx.on("page", watch);
  return ctx;
}

function watch(page) {
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to (execute|load|apply)/i.test(m.text())) cspViolations.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => cspViolations.push(`${page.url()}: page error ${e.message}`));
}

/** signIn opens a fresh console link for email in ctx and presses Sign in. */
async function signIn(ctx, email) {
  const out = await gh.cli("console", "link", "--email", email);
  assert.match(out.link, /\/console\/link\?token=ghl_/);
  const link = new URL(out.link);
  const page = await ctx.newPage();
  await page.goto(`${gh.base}${link.pathname}${link.search}`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/w\//);
  return page;
}

/** audit runs axe-core on the page and fails on serious or critical violations. */
async function audit(page, what) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], `${what}: accessibility`);
}

async function shot(page, name) {
  if (shotsDir) await page.screenshot({ path: `${shotsDir}/${name}.png`, fullPage: false });
}

async function apiUser(appId, email) {
  const secret = await gh.appSecret(appId);
  const res = await fetch(`${gh.base}/v1/${appId}/users`, {
    method: "POST", headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ identifier: email }),
  });
  const body = await res.json();
  assert.ok(res.status === 200 || res.status === 201, JSON.stringify(body));
  return body.user.id;
}

async function codeSignIn(appId, email) {
  // The message leaves after the answer: wait for this one, not an older code.
  const mark = await gh.outboxMark(email);
  let res = await fetch(`${gh.base}/v1/auth/${appId}/otps/login`, {
    method: "POST", headers: { "Content-Type": "application/json", "User-Agent": "ConsoleTest/1.0" }, body: JSON.stringify({ identifier: email }),
  });
  const sent = await res.json();
  assert.equal(res.status, 200, JSON.stringify(sent));
  const code = await gh.lastCode(email, { after: mark });
  res = await fetch(`${gh.base}/v1/auth/${appId}/otps/verify`, {
    method: "POST", headers: { "Content-Type": "application/json", "User-Agent": "ConsoleTest/1.0" },
    body: JSON.stringify({ otp: code, user_id: sent.user_id }),
  });
  assert.equal(res.status, 200, await res.text());
}

let appId;

test("an owner signs in with a console link; the session cookie is __Host-, Secure, HttpOnly, SameSite=Strict", async () => {
  const ctx = await context();
  owner = await signIn(ctx, OWNER);
  const cookie = (await ctx.cookies()).find((c) => c.name === "__Host-gatehouse_console");
  assert.ok(cookie, "no console cookie");
  assert.equal(cookie.secure, true);
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, "Strict");
  assert.equal(cookie.path, "/");
  const res = await owner.request.get(`${gh.base}/console/account`);
  assert.match(res.headers()["content-security-policy"], /script-src 'nonce-[A-Za-z0-9_-]+'.*frame-ancestors 'none'/);
  await audit(owner, "apps");
  await shot(owner, "apps");
});

test("create an app; change a setting with the live flow preview; the API shows it", async () => {
  await owner.getByLabel("Name").fill(`Console ${tag}`);
  await owner.getByLabel("Origin").fill("https://console-test.example");
  await owner.getByRole("button", { name: "Create app" }).click();
  await owner.waitForURL(/\/apps\/[0-9a-f-]{36}\?notice=app-created/);
  appId = owner.url().match(/\/apps\/([0-9a-f-]{36})/)[1];
  await owner.getByText("App created.").waitFor();
  const preview = owner.locator("#preview");
  assert.match(await preview.textContent(), /e-mails a link/);
  await owner.getByLabel("E-mail sign-in").selectOption("otp");
  // htmx fetches the preview of the unsaved form (CSP allows its script by nonce; nothing inline).
  await preview.getByText(/e-mails a one-time code/).waitFor({ timeout: 5000 });
  await owner.getByLabel("MFA policy").selectOption("required");
  await preview.getByText(/Every user must pass a second factor/).waitFor({ timeout: 5000 });
  await audit(owner, "settings");
  await shot(owner, "settings");
  await owner.getByRole("button", { name: "Save settings" }).click();
  await owner.getByText("Saved.").waitFor();
  const { status, body } = await gh.manage("GET", `/v1/workspaces/${gh.workspaceId}/apps/${appId}`);
  assert.equal(status, 200);
  assert.equal(body.app.email_auth_type, "otp");
  assert.equal(body.app.mfa_policy, "required");
});

test("find a user by a pasted id and revoke the user's session", async () => {
  await gh.manage("PATCH", `/v1/workspaces/${gh.workspaceId}/apps/${appId}`, { mfa_policy: "off" });
  const ann = `ann-${tag}@console-test.example`;
  const id = await apiUser(appId, ann);
  await apiUser(appId, `bob-${tag}@console-test.example`);
  await codeSignIn(appId, ann);
  await owner.getByRole("link", { name: "Users" }).click();
  await owner.getByLabel("Search").fill(id);
  await owner.getByRole("button", { name: "Search" }).click();
  await owner.getByRole("link", { name: ann }).click();
  await owner.getByText("ConsoleTest/1.0").first().waitFor();
  await audit(owner, "user");
  await shot(owner, "user");
  await owner.getByRole("button", { name: /^Revoke session/ }).click();
  await owner.getByText("Sessions revoked.").waitFor();
  await owner.getByText("No live sessions.").waitFor();
  // The sign-in stays in the history, now revoked.
  await owner.getByRole("cell", { name: /^revoked / }).waitFor();
  // The profile form, by keyboard-reachable controls only.
  await owner.getByText("Edit profile and metadata").click();
  await audit(owner, "user-profile");
  const renamed = `ann-${tag}.b@console-test.example`;
  await owner.getByLabel("E-mail address").fill(renamed);
  await owner.getByRole("button", { name: "Save profile" }).click();
  await owner.getByText("Profile saved.").waitFor();
  const read = await gh.manage("GET", `/v1/${appId}/users/${id}`);
  assert.equal(read.body.user.email, renamed);
  await owner.getByRole("link", { name: "Users" }).click();
  await audit(owner, "users");
  await shot(owner, "users");
});

test("an API key is shown once and can be revoked", async () => {
  await owner.getByRole("link", { name: "Credentials" }).click();
  await owner.getByLabel("Nickname").fill("ci");
  await owner.getByRole("button", { name: "Create", exact: true }).click();
  const key = await owner.locator("#new-key").inputValue();
  assert.match(key, /^ghk_/);
  await audit(owner, "keys");
  const res = await fetch(`${gh.base}/v1/${appId}/users`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  await owner.getByRole("link", { name: "Credentials" }).click();
  assert.equal(await owner.locator("#new-key").count(), 0, "the key is shown again");
  await owner.getByRole("button", { name: "Revoke key ci" }).click();
  await owner.getByText("API key revoked.").waitFor();
  const after = await fetch(`${gh.base}/v1/${appId}/users`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(after.status, 401);
});

test("a member-role operator reads but cannot change settings, make keys or remove members", async () => {
  await owner.getByRole("link", { name: "Members" }).click();
  await owner.getByLabel("E-mail address").fill(`mel-${tag}@console-test.example`);
  await owner.locator('form[action$="/members"] select[name="role"]').selectOption("member");
  await owner.getByRole("button", { name: "Add member" }).click();
  await owner.getByText("Member added.").waitFor();
  await audit(owner, "members");
  await shot(owner, "members");

  // Mel signs in with an e-mail code (the built-in console app, through signin).
  const ctx = await context();
  const mel = await ctx.newPage();
  const melEmail = `mel-${tag}@console-test.example`;
  await mel.goto(`${gh.base}/console/signin`);
  await audit(mel, "sign-in page");
  await mel.getByLabel("Your e-mail address").fill(melEmail);
  const melMark = await gh.outboxMark(melEmail);
  await mel.getByRole("button", { name: "E-mail me a code" }).click();
  await mel.getByLabel("Code").fill(await gh.lastCode(melEmail, { after: melMark }));
  await audit(mel, "code page");
  await mel.getByRole("button", { name: "Sign in" }).click();
  await mel.waitForURL(/\/console\/w\//);
  await mel.goto(`${gh.base}/console/w/${gh.workspaceId}/apps/${appId}`);
  assert.equal(await mel.getByRole("button", { name: "Save settings" }).count(), 0);
  assert.equal(await mel.getByRole("link", { name: "Credentials" }).count(), 0);
  // The page offers nothing; the server refuses anyway, each action on its own.
  const csrf = await mel.locator('input[name="csrf"]').first().inputValue();
  const tries = await mel.evaluate(async ({ ws, app, csrf }) => {
    const post = async (path, fields) => {
      const r = await fetch(path, { method: "POST", body: new URLSearchParams({ csrf, ...fields }) });
      return r.status;
    };
    return [
      await post(`/console/w/${ws}/apps/${app}`, { email_auth_type: "magic" }),
      await post(`/console/w/${ws}/apps/${app}/keys`, { nickname: "mine" }),
      await post(`/console/w/${ws}/members`, { email: "eve@example.com", role: "owner" }),
    ];
  }, { ws: gh.workspaceId, app: appId, csrf });
  assert.deepEqual(tries, [403, 403, 403]);
  const { body } = await gh.manage("GET", `/v1/workspaces/${gh.workspaceId}/apps/${appId}`);
  assert.equal(body.app.email_auth_type, "otp", "a member changed a setting");
  await audit(mel, "member's settings page");
  await ctx.close();
});

test("webhooks: add an endpoint, send a test, see the delivery's attempts and payload, redeliver, rotate the secret", async () => {
  const got = [];
  const recv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ id: req.headers["webhook-id"], body });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => recv.listen(0, "127.0.0.1", r));
  try {
    await owner.goto(`${gh.base}/console/w/${gh.workspaceId}/apps/${appId}/webhooks`);
    await owner.getByLabel("URL").fill(`http://127.0.0.1:${recv.address().port}/hook`);
    await owner.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await owner.locator("#new-secret").inputValue();
    assert.match(secret, /^whsec_/);
    await audit(owner, "webhooks");
    await owner.getByRole("link", { name: /\/hook$/ }).click();
    await owner.getByRole("button", { name: "Send a test event" }).click();
    await owner.getByText("Test event queued").waitFor();
    // Deliveries are made by the job workers: reload until it is delivered.
    for (let i = 0; i < 50 && !(await owner.getByText("HTTP 204").count()); i++) {
      await new Promise((r) => setTimeout(r, 200));
      await owner.reload();
    }
    await owner.getByRole("link", { name: "webhook.test" }).first().click();
    await owner.getByText("This is a test event.").waitFor();
    await owner.getByText(/attempt 1: HTTP 204/).waitFor();
    await audit(owner, "delivery");
    await shot(owner, "delivery");
    await owner.getByRole("button", { name: "Redeliver" }).click();
    await owner.getByText("Queued again").waitFor();
    for (let i = 0; i < 50 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(got.length, 2, "the redelivery did not arrive");
    assert.equal(got[0].id, got[1].id, "a redelivery carries the event's id");
    await owner.getByRole("link", { name: /← / }).click();
    await owner.getByRole("button", { name: "Rotate signing secret" }).click();
    const rotated = await owner.locator("#new-secret").inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await owner.getByText(/still signs until/).waitFor();
    await audit(owner, "webhook endpoint");
  } finally {
    recv.close();
  }
});

test("social sign-in: the providers page; a provider added, its secret shown only as a hint", async () => {
  const secret = `gh-console-secret-${tag}`;
  await owner.getByRole("link", { name: "Social sign-in" }).click();
  await owner.getByText("Register this redirect URI").waitFor();
  await audit(owner, "social sign-in");
  await owner.locator("summary", { hasText: "Add GitHub" }).click();
  const form = owner.locator('form:has(input[name="type"][value="github"])');
  await form.getByLabel(/Client ID/).fill("Iv1.console");
  await form.getByLabel(/Client secret/).fill(secret);
  await form.getByRole("button", { name: "Add GitHub" }).click();
  await owner.getByText("Saved.").waitFor();
  assert.ok(!(await owner.content()).includes(secret), "the page shows the client secret");
  await audit(owner, "social sign-in with a provider");
});

test("the audit log shows every change made here, with before and after and no secret", async () => {
  await owner.getByRole("link", { name: "Audit log" }).click();
  const text = await owner.locator("main").textContent();
  for (const action of ["app.created", "app.updated", "api_key.created", "api_key.revoked", "session.revoked", "member.added", "console.signed_in",
    "console.link_created", "webhook.created", "webhook.secret_rotated", "oauth_provider.created"]) {
    assert.ok(text.includes(action), `audit log lacks ${action}`);
  }
  assert.doesNotMatch(text, /ghk_[A-Za-z0-9_-]{20}|ghl_|ghs_|whsec_/);
  await owner.getByLabel("Action").fill("app.updated");
  await owner.getByRole("button", { name: "Filter" }).click();
  assert.match(await owner.locator("tbody").textContent(), /"email_auth_type":"magic"[\s\S]*"email_auth_type":"otp"/);
  await audit(owner, "audit log");
  await shot(owner, "audit");
});

test("an operator adds a passkey (virtual authenticator) and signs in with it", async () => {
  // Passkeys need a domain name: serve --dev's console app is localhost on the server's port.
  const local = gh.base.replace("127.0.0.1", "localhost");
  const ctx = await context();
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.goto(`${local}/console/signin`);
  await page.getByLabel("Your e-mail address").fill(OWNER);
  const ownerMark = await gh.outboxMark(OWNER);
  await page.getByRole("button", { name: "E-mail me a code" }).click();
  await page.getByLabel("Code").fill(await gh.lastCode(OWNER, { after: ownerMark }));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/w\//);
  await page.goto(`${local}/console/account`);
  await page.getByRole("button", { name: "Add a passkey on this device" }).click();
  await page.getByText("Passkey added").waitFor();
  assert.equal(await page.getByRole("button", { name: /^Remove passkey/ }).count(), 1);
  await audit(page, "account");
  await shot(page, "account");
  await page.getByRole("banner").getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/console\/signin/);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await page.waitForURL(/\/console\/w\//);
  const { body } = await gh.manage("GET", `/v1/workspaces/${gh.workspaceId}/audit_log?action=console.signed_in&limit=1`);
  assert.equal(body.entries[0].after.method, "passkey");
  await ctx.close();
});

test("with JavaScript off the console still reads and signs in", async () => {
  const ctx = await context({ javaScriptEnabled: false });
  const page = await signIn(ctx, OWNER);
  await page.goto(`${gh.base}/console/w/${gh.workspaceId}/apps/${appId}/users`);
  await page.getByRole("link", { name: new RegExp(`ann-${tag}`) }).waitFor();
  await ctx.close();
});

test("no page broke its Content-Security-Policy", () => {
  assert.deepEqual(cspViolations, []);
});
