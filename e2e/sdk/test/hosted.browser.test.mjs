// The hosted sign-in and account pages (docs/hosted-pages.md, issue 27) in
// headless Chromium, against the real binary: /login/{app_id} signs in by an
// e-mailed code and lands on the app's callback with sct_magic, where the
// unmodified @scute/core 1.2.2 (bundled at test time, as in the passkey
// suite) signs in with verifyMagicLinkToken; a wrong code says so; the
// account page sends a browser without a session to the sign-in page, and
// with one lists the user's sessions and revokes one; the sign-in works by
// keyboard alone and with JavaScript off. The login, code and account pages
// pass axe-core (no serious or critical violation), and no page reports a
// CSP violation. With GATEHOUSE_HOSTED_SHOTS=<dir> it saves the screenshots
// docs/hosted-pages.md shows (docs/hosted-pages/*.png).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium, bundleSdk, serveApp, decodeJwt, magicTokenFromLink } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const shotsDir = process.env.GATEHOUSE_HOSTED_SHOTS || "";
const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const FIREFOX_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0";

let gh, browser, appServers, origin, app;
const cspViolations = [];

/** The app's callback page: @scute/core reads sct_magic and signs in with it (C5). */
function callbackHtml(config) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hosted test app</title></head>
<body><h1>Hosted test app</h1>
<script src="/scute.js"></script>
<script>
window.__config = ${JSON.stringify(config)};
const client = new Scute.ScuteClient({ appId: __config.appId, baseUrl: __config.baseUrl });
window.result = (async () => {
  const token = client.getMagicLinkToken();
  if (!token) return { error: "no sct_magic" };
  const v = await client.verifyMagicLinkToken(token);
  if (v.error) return { error: String(v.error.message || v.error), json: v.error.json ?? null };
  const s = await client.getSession();
  return { status: s.data?.session?.status ?? null, access: s.data?.session?.access ?? null, email: s.data?.user?.email ?? null };
})();
</script>
</body></html>`;
}

before(async () => {
  const bundle = await bundleSdk();
  gh = await startGatehouse();
  const served = await serveApp({ bundle, paths: ["/", "/callback"], page: () => callbackHtml({ appId: app.id, baseUrl: gh.base }) });
  appServers = served.servers;
  origin = served.origin;
  app = await gh.createApp({ name: "Hosted test app", origin, callback_url: `${origin}/callback`, email_auth_type: "otp", allowed_identifiers: ["email"] });
  assert.ok(app.id, `created app: ${JSON.stringify(app)}`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const s of appServers ?? []) s.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

// --- helpers -----------------------------------------------------------------

/** context opens a browser context whose pages report CSP violations (event and console). */
async function context(opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 760, height: 640 }, ...opts });
  // An init script is the browser's, not the page's: the page's CSP does not govern it.
  if (opts.javaScriptEnabled !== false) {
    await ctx.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) =>
        console.error(`securitypolicyviolation: ${e.violatedDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
    });
  }
  ctx.on("page", (page) => {
    page.on("console", (m) => {
      if (/securitypolicyviolation|Content Security Policy|Refused to (execute|load|apply|connect|frame)/i.test(m.text())) cspViolations.push(`${page.url()}: ${m.text()}`);
    });
  });
  return ctx;
}

/** audit runs axe-core (through the DevTools protocol, so the page's CSP is untouched) and fails on serious or critical violations. */
async function audit(page, what) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], `${what}: accessibility`);
}

async function shot(page, name) {
  if (shotsDir) await page.screenshot({ path: path.join(shotsDir, `${name}.png`), fullPage: true });
}

const loginURL = (query = "") => `${gh.base}/login/${app.id}${query}`;

/** sendCode fills the identifier and presses the send button; returns the code the outbox got. */
async function sendCode(page, email) {
  const mark = await gh.outboxMark(email);
  await page.getByLabel(/e-mail/i).fill(email);
  await page.getByRole("button", { name: /code/i }).click();
  await page.getByLabel("Code").waitFor();
  return gh.lastCode(email, { after: mark });
}

/**
 * finish goes past an optional "add a passkey to this device?" offer (the
 * hosted page may show one after a code sign-in) and waits for a URL that
 * starts with prefix.
 */
async function finish(page, prefix) {
  const deadline = Date.now() + 10_000;
  while (!page.url().startsWith(prefix)) {
    const notNow = page.getByRole("button", { name: "Not now" });
    if (await notNow.count()) await notNow.click();
    if (Date.now() > deadline) throw new Error(`did not reach ${prefix}: at ${page.url()}\n${await page.locator("body").innerText().catch(() => "")}`);
    await page.waitForTimeout(100);
  }
}

/** codeSignInByAPI signs email in through the API with a user agent of its own (another device) and returns the token set. */
async function codeSignInByAPI(email, ua) {
  const headers = { "Content-Type": "application/json", "User-Agent": ua };
  // The message leaves after the answer: wait for this one, not an older code.
  const mark = await gh.outboxMark(email);
  let res = await fetch(`${gh.base}/v1/auth/${app.id}/otps/login`, { method: "POST", headers, body: JSON.stringify({ identifier: email }) });
  const sent = await res.json();
  assert.equal(res.status, 200, JSON.stringify(sent));
  const code = await gh.lastCode(email, { after: mark });
  res = await fetch(`${gh.base}/v1/auth/${app.id}/otps/verify`, { method: "POST", headers, body: JSON.stringify({ otp: code, user_id: sent.user_id }) });
  const set = await res.json();
  assert.equal(res.status, 200, JSON.stringify(set));
  return set;
}

// --- the steps ----------------------------------------------------------------

test("GET /login/{app}: a nonce CSP with frame-ancestors the app's origin; the page passes axe-core", async () => {
  const ctx = await context();
  const page = await ctx.newPage();
  const res = await page.goto(loginURL());
  assert.equal(res.status(), 200);
  const csp = res.headers()["content-security-policy"] ?? "";
  assert.match(csp, /script-src[^;]*'nonce-[A-Za-z0-9+/_=-]+'/, csp);
  assert.doesNotMatch(csp, /'unsafe-inline'|'unsafe-eval'/, csp);
  const ancestors = csp.split(";").map((d) => d.trim()).find((d) => d.startsWith("frame-ancestors"));
  assert.ok(ancestors, `no frame-ancestors in ${csp}`);
  assert.ok(ancestors.split(/\s+/).includes(origin), `frame-ancestors is the app's origin: ${ancestors}`);
  await page.getByRole("heading", { name: /Sign in/ }).waitFor();
  const field = page.getByLabel(/e-mail/i);
  assert.match((await field.getAttribute("autocomplete")) ?? "", /username webauthn/);
  await audit(page, "login page");
  await shot(page, "login");
  await ctx.close();
});

test("code sign-in through the form lands on the app's callback with sct_magic, and verifyMagicLinkToken signs in", async () => {
  const email = "ada@example.com"; // each run has a server (and database) of its own
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(loginURL());
  const code = await sendCode(page, email);
  await page.getByRole("heading", { name: /code/i }).waitFor();
  await audit(page, "code page");
  await shot(page, "code");
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
  await finish(page, `${origin}/callback`);
  const url = new URL(page.url());
  const token = url.searchParams.get("sct_magic");
  assert.ok(token, `no sct_magic in ${page.url()}`);
  assert.equal(url.searchParams.get("sct_sk"), "true", "sct_sk=true: the SDK signs in at once");
  // The callback page's script may not have run when its URL is reached.
  await page.waitForFunction(() => window.result !== undefined, null, { timeout: 10_000 });
  const result = await page.evaluate(() => window.result);
  assert.equal(result.error, undefined, JSON.stringify(result));
  assert.equal(result.status, "authenticated", JSON.stringify(result));
  assert.equal(result.email, email);
  const claims = decodeJwt(result.access);
  assert.ok(claims.uuid, "the access token names the user");
  // The token works once (C5).
  const again = await fetch(`${gh.base}/v1/auth/${app.id}/magic_links/authenticate`, {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  assert.equal(again.status, 404, "a second use of sct_magic");
  await ctx.close();
});

test("a wrong code shows a plain message on the code page; the right code then signs in", async () => {
  const email = `wrong-${tag}@example.com`;
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(loginURL());
  const code = await sendCode(page, email);
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
  await page.getByLabel("Code").fill(wrong);
  await page.getByRole("button", { name: "Sign in" }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.innerText(), /not right|expired|wrong/i);
  assert.equal(new URL(page.url()).origin, gh.base, "still on Gatehouse");
  await audit(page, "code page with an error");
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
  await finish(page, `${origin}/callback`);
  assert.ok(magicTokenFromLink(page.url()));
  await ctx.close();
});

test("/account/{app} without a session goes to the sign-in page, which comes back to it", async () => {
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(`${gh.base}/account/${app.id}`);
  const url = new URL(page.url());
  assert.equal(url.pathname, `/login/${app.id}`);
  assert.equal(url.searchParams.get("return"), `/account/${app.id}`);
  await ctx.close();
});

test("/account/{app} with a session lists the user's sessions; Revoke ends another one", async () => {
  const email = "grace@example.com";
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(`${gh.base}/account/${app.id}`);
  const code = await sendCode(page, email);
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
  await finish(page, `${gh.base}/account/${app.id}`);
  await page.getByRole("heading", { name: "Your account" }).waitFor();
  // Another device of the same user, signed in through the API.
  const other = await codeSignInByAPI(email, FIREFOX_UA);
  await page.reload();
  const body = await page.locator("main").innerText();
  assert.ok(body.includes(email), "signed in as the user");
  assert.match(body, /Firefox on Windows/, "the other device is listed");
  assert.match(body, /this device/, "this device is marked");
  await audit(page, "account page");
  await shot(page, "account");

  await page.getByRole("button", { name: /Firefox on Windows/ }).click();
  await page.waitForLoadState();
  assert.doesNotMatch(await page.locator("main").innerText(), /Firefox on Windows/, "the revoked session is gone");
  const refreshed = await fetch(`${gh.base}/v1/auth/${app.id}/tokens/refresh`, {
    method: "POST", headers: { "X-Refresh-Token": other.refresh, "X-CSRF-Token": other.csrf ?? "" },
  });
  assert.equal(refreshed.status, 401, "the revoked session's refresh token no longer refreshes");
  const me = await fetch(`${gh.base}/v1/auth/${app.id}/current_user`, { headers: { "X-Authorization": other.access } });
  assert.equal(me.status, 401, "its access token is refused");
  // This browser's own session lives on.
  await page.reload();
  await page.getByRole("heading", { name: "Your account" }).waitFor();
  await ctx.close();
});

test("keyboard only: the focus starts in the field, Tab reaches the button with a visible focus ring, Enter submits each step", async () => {
  const email = `keys-${tag}@example.com`;
  const ctx = await context();
  const page = await ctx.newPage();
  await page.goto(loginURL());
  const focused = () => page.evaluate(() => ({ id: document.activeElement?.id, tag: document.activeElement?.tagName, text: document.activeElement?.textContent?.trim() }));
  assert.equal((await focused()).id, "identifier", "the identifier field has the focus");
  await page.keyboard.press("Tab");
  const onButton = await focused();
  assert.equal(onButton.tag, "BUTTON", `Tab from the field: ${JSON.stringify(onButton)}`);
  const ring = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(ring, "none", "the focused button shows a focus outline");
  await page.keyboard.press("Shift+Tab");
  assert.equal((await focused()).id, "identifier");
  const mark = await gh.outboxMark(email);
  await page.keyboard.type(email);
  await page.keyboard.press("Enter");
  await page.getByLabel("Code").waitFor();
  assert.equal((await focused()).id, "code", "the code field has the focus");
  const code = await gh.lastCode(email, { after: mark });
  await page.keyboard.type(code);
  await page.keyboard.press("Enter");
  // An offer to add a passkey would be answered by keyboard too.
  const deadline = Date.now() + 10_000;
  while (!page.url().startsWith(`${origin}/callback`)) {
    const notNow = page.getByRole("button", { name: "Not now" });
    if (await notNow.count()) {
      await notNow.focus();
      await page.keyboard.press("Enter");
    }
    assert.ok(Date.now() < deadline, `did not reach the callback: ${page.url()}`);
    await page.waitForTimeout(100);
  }
  assert.ok(magicTokenFromLink(page.url()));
  await ctx.close();
});

test("with JavaScript off the code path still works, and its token is accepted (C5)", async () => {
  const email = `nojs-${tag}@example.com`;
  const ctx = await context({ javaScriptEnabled: false });
  const page = await ctx.newPage();
  await page.goto(loginURL());
  const code = await sendCode(page, email);
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
  await finish(page, `${origin}/callback`);
  const token = magicTokenFromLink(page.url());
  assert.ok(token, page.url());
  const res = await fetch(`${gh.base}/v1/auth/${app.id}/magic_links/authenticate`, {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  const set = await res.json();
  assert.equal(res.status, 200, JSON.stringify(set));
  assert.ok(set.access && set.refresh);
  await ctx.close();
});

test("no page reported a Content-Security-Policy violation", () => {
  assert.deepEqual(cspViolations, []);
});
