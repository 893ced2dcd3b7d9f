// The hosted sign-in and account pages (docs/hosted-pages.md) in headless
// Chromium against the real binary: the paths hosted.browser.test.mjs does
// not drive.
//
//   - Passkeys (hosted.js, with a CDP virtual authenticator per page, as in
//     passkeys.browser.test.mjs; "the same passkey on another device" is its
//     credential exported with WebAuthn.getCredentials and added to the new
//     page's authenticator): a code sign-in accepts "Add a passkey to this
//     device?"; a fresh browser holding the credential signs in from the
//     field's autofill (conditional UI), and, in a browser without
//     conditional UI, with the "Sign in with a passkey" button for the typed
//     address (no code, no offer); the passkey as the second factor of an app
//     whose mfa_policy is optional; a browser without it is told so; a copy
//     whose signature counter went backwards is refused. These pages are
//     served at http://localhost:<port> (an allowed origin of the app, under
//     its RP ID "localhost"), the only place the browser may use the app's
//     passkeys.
//   - Magic links: the waiting page ("Check your e-mail") on device A
//     ("I've opened the link" too early says not yet); the consent page on
//     device B (another user agent) with A's match number, and A's own
//     4-second poll moving on by itself to the app's callback; a wrong number
//     there ends A's waiting page; the same-device landing page and Continue,
//     after which the waiting tab finds the browser signed in (Continue as).
//   - The account page's forms: sign-up fields (a value the schema refuses
//     shown by its field), then the profile; an authenticator app (the TOTP
//     code computed here, RFC 6238) whose key is shown once; backup codes
//     shown once; passkeys added, renamed and removed (hosted_account.js);
//     the step-up page ("Confirm it's you") by a passkey, an authenticator
//     app, a backup code and an e-mailed code; an e-mail change with the code
//     the new address got (another user's address refused).
//   - Refusals: a wrong code (role=alert, the form again), five wrong codes
//     end the code, the sixth send to one address is rate limited (429,
//     Retry-After).
//
// Each new page passes axe-core (no serious or critical violation) and no
// page reports a Content-Security-Policy violation.
//
// A change that needs a recent sign-in is refused only once the sign-in is
// older than the app's mfa_reverify_minutes (at least 5), which the Go
// tests reach with a fake clock. A browser against the real binary cannot
// wait that long, so the 403 step-up page is reached by the rule's other
// arm: a passkey or authenticator app cannot vouch for its own removal (a
// step-up by it, then "Remove" it).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium, serveApp, decodeJwt, magicTokenFromLink, waitFor } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

// This file's server only (node --test runs each file in a process of its
// own): every page here comes from 127.0.0.1, so the per-address budgets of
// sends, code checks and challenges are raised out of the way; the
// per-identifier one stays the default, stated here because the rate-limit
// test counts on it, and the per-user budgets of wrong codes stay too.
process.env.GATEHOUSE_RATELIMIT_SEND_PER_IP = "1000/10m";
process.env.GATEHOUSE_RATELIMIT_VERIFY_PER_IP = "1000/10m";
process.env.GATEHOUSE_RATELIMIT_CHALLENGE_PER_IP = "1000/10m";
process.env.GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER = "5/10m";

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
// Device B of the magic-link tests: not the user agent that asked for the link.
const PHONE_UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";

let gh, browser, appServers, origin;
/** Gatehouse at http://localhost:<port>: an allowed origin of the passkey app, under its RP ID. */
let ghLocal;
/** The apps: passkeys (P), magic links (G), account forms (A), sign-up fields (R). */
const apps = {};
const cspViolations = [];
const pageErrors = [];
const contexts = [];
const state = {};

/** The app's callback page: plain, so that the test redeems sct_magic itself (once). */
const callbackHtml = () => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Callback</title></head>
<body><main><h1>Back in the app</h1></main></body></html>`;

before(async () => {
  gh = await startGatehouse();
  ghLocal = gh.base.replace("//127.0.0.1:", "//localhost:");
  assert.notEqual(ghLocal, gh.base, `base_url ${gh.base} is not on 127.0.0.1`);
  const served = await serveApp({ bundle: "", paths: ["/", "/callback"], page: callbackHtml });
  appServers = served.servers;
  origin = served.origin;
  const common = { origin, callback_url: `${origin}/callback`, allowed_identifiers: ["email"] };
  apps.P = await gh.createApp({
    ...common, name: "Passkey shop", email_auth_type: "otp", allowed_origins: [ghLocal],
    mfa_policy: "optional", mfa_methods_allowed: ["totp", "backup_code", "webauthn"], mfa_reverify_minutes: 5,
  });
  apps.G = await gh.createApp({ ...common, name: "Link shop", email_auth_type: "magic" });
  apps.A = await gh.createApp({
    ...common, name: "Account shop", email_auth_type: "otp",
    mfa_policy: "optional", mfa_methods_allowed: ["totp", "backup_code", "webauthn"], mfa_reverify_minutes: 5,
  });
  apps.R = await gh.createApp({
    ...common, name: "Signup shop", email_auth_type: "otp", public_signup: true, profile_management: true,
    user_meta_data_schema: [
      { id: "1", name: "Company", field_name: "company", field_type: "string", visible_registration: true, visible_profile: true, required: true },
      { id: "2", name: "Mobile", field_name: "mobile", field_type: "phone", visible_registration: true, visible_profile: true, required: false },
      { id: "3", name: "Newsletter", field_name: "newsletter", field_type: "boolean", visible_registration: false, visible_profile: true, required: false },
      { id: "4", name: "Plan", field_name: "plan", field_type: "string", visible_registration: false, visible_profile: false, required: false },
    ],
  });
  for (const [k, a] of Object.entries(apps)) assert.ok(a.id, `app ${k}: ${JSON.stringify(a)}`);
  assert.equal(apps.P.mfa_policy, "optional", JSON.stringify(apps.P));
  browser = await launchChromium();
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  for (const s of appServers ?? []) s.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

// --- helpers -----------------------------------------------------------------

/**
 * context opens a browser context (a device) whose pages report CSP
 * violations and script errors. With conditionalUI: false it is a browser
 * without passkey autofill (PublicKeyCredential.isConditionalMediationAvailable
 * answers false): Chromium's virtual authenticator answers a conditional
 * request at once, so a page holding the passkey would sign in before any
 * button could be pressed.
 */
async function context({ conditionalUI = true, ...opts } = {}) {
  const ctx = await browser.newContext({ viewport: { width: 760, height: 640 }, ...opts });
  contexts.push(ctx);
  // An init script is the browser's, not the page's: the page's CSP does not govern it.
  await ctx.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      console.error(`securitypolicyviolation: ${e.violatedDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
  });
  if (!conditionalUI) {
    await ctx.addInitScript(() => {
      if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = async () => false;
    });
  }
  ctx.on("page", (page) => {
    page.on("console", (m) => {
      if (/securitypolicyviolation|Content Security Policy|Refused to (execute|load|apply|connect|frame)/i.test(m.text())) cspViolations.push(`${page.url()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => pageErrors.push(`${page.url()}: ${e.message}`));
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

/** heading waits for the page's heading name (exact), or fails with where the page is and what it says. */
async function heading(page, name, timeout = 10_000) {
  try {
    await page.getByRole("heading", { name, exact: true }).waitFor({ timeout });
  } catch (e) {
    const text = await page.locator("body").innerText().catch(() => "");
    throw new Error(`no heading "${name}" at ${page.url()}:\n${text.slice(0, 1500)}`, { cause: e });
  }
}

/** alertText waits for the page's role=alert line and returns its text. */
async function alertText(page) {
  const alert = page.getByRole("alert");
  await alert.first().waitFor();
  return (await alert.allInnerTexts()).join("\n");
}

/**
 * authenticator gives page a CDP virtual authenticator (ctap2, internal,
 * resident keys, user verification, presence simulated), holding the given
 * credentials (exported from another one: the same passkey on a new device).
 */
async function authenticator(page, credentials = []) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  for (const credential of credentials) await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
  return {
    async credentials() {
      return (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
    },
  };
}

/** sendCode fills the login form of the page (open at the login page) and waits for the code step; returns the code. */
async function sendCode(page, email) {
  const mark = await gh.outboxMark(email);
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Send me a code" }).click();
  await page.getByLabel("Code").waitFor();
  return gh.lastCode(email, { after: mark });
}

/** enterCode types code into the code step and presses Sign in. */
async function enterCode(page, code) {
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** atURL waits until the page is at a URL starting with prefix (after a form's redirects). */
async function atURL(page, prefix, timeout = 10_000) {
  await page.waitForURL((u) => u.href.startsWith(prefix), { timeout });
}

/** redeem exchanges the callback URL's sct_magic for the app's token set (C5) and returns it with the access token's claims. */
async function redeem(url, app) {
  const token = magicTokenFromLink(url);
  assert.ok(token, `no sct_magic in ${url}`);
  const res = await fetch(`${gh.base}/v1/auth/${app.id}/magic_links/authenticate`, {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  const set = await res.json();
  assert.equal(res.status, 200, `redeem sct_magic: ${JSON.stringify(set)}`);
  assert.ok(set.access, JSON.stringify(Object.keys(set)));
  return { set, claims: decodeJwt(set.access) };
}

/** messagesSince lists the messages to `to` that are not in mark. */
async function messagesSince(to, mark) {
  return (await gh.outbox(to)).filter((m) => !mark.has(m.id));
}

/** signInToAccount signs a new browser page in by code, back to the account page of app at base; declines a passkey offer. */
async function signInToAccount(page, base, app, email) {
  await page.goto(`${base}/account/${app.id}`);
  await atURL(page, `${base}/login/${app.id}?return=`);
  const code = await sendCode(page, email);
  await enterCode(page, code);
  const offer = page.getByRole("button", { name: "Not now" });
  const account = page.getByRole("heading", { name: "Your account" });
  await offer.or(account).first().waitFor();
  if (await offer.isVisible()) await offer.click();
  await account.waitFor();
  assert.equal(page.url(), `${base}/account/${app.id}`);
}

// RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps.
function base32Decode(s) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, value = 0;
  const out = [];
  for (const ch of s.replace(/=+$/, "").toUpperCase()) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

function totpAt(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = crypto.createHmac("sha1", base32Decode(secret)).update(counter).digest();
  const off = mac[mac.length - 1] & 0x0f;
  const n = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3];
  return String(n % 1_000_000).padStart(6, "0");
}

/** wrongTOTP is a code that none of the steps the server accepts now has. */
function wrongTOTP(secret) {
  const cur = Math.floor(Date.now() / 30_000);
  const near = new Set([-1, 0, 1, 2].map((d) => totpAt(secret, cur + d)));
  return ["000000", "111111", "222222", "333333", "444444"].find((c) => !near.has(c));
}

/**
 * TOTP hands out codes of an authenticator app: each of a later time step
 * than the last (the server refuses a step used already), within the one
 * step either side of now that the server accepts, so that three codes in
 * a row need no wait.
 */
class TOTP {
  constructor(secret) {
    this.secret = secret;
    this.last = -Infinity;
  }
  next() {
    const now = Date.now() / 1000;
    const cur = Math.floor(now / 30);
    // The step before now is good until the next boundary; not when it is close.
    const first = now - cur * 30 < 25 ? cur - 1 : cur;
    const step = Math.max(this.last + 1, first);
    assert.ok(step <= cur + 1, "a fourth TOTP code within one step");
    this.last = step;
    return totpAt(this.secret, step);
  }
}

// --- passkeys on the sign-in page ---------------------------------------------

test("passkeys: after a code sign-in, 'Add a passkey to this device?' makes one in the authenticator and goes on to the callback", async () => {
  const app = apps.P;
  const email = `pk-${tag}@example.com`;
  const ctx = await context();
  const page = await ctx.newPage();
  const auth = await authenticator(page);
  await page.goto(`${ghLocal}/login/${app.id}`);
  // hosted.js shows the passkey button only where the browser may use the app's passkeys.
  await page.getByRole("button", { name: "Sign in with a passkey" }).waitFor();
  await audit(page, "login page with the passkey button");
  const code = await sendCode(page, email);
  await enterCode(page, code);
  await heading(page, "Add a passkey to this device?");
  assert.equal(new URL(page.url()).pathname, `/login/${app.id}/passkey/add`);
  assert.match(await page.locator("main").innerText(), new RegExp(`signed in as ${email.replace(/[.+]/g, "\\$&")}`, "i"));
  await audit(page, "offer page");
  const mark = await gh.outboxMark(email);
  await page.getByRole("button", { name: "Add a passkey", exact: true }).click();
  await atURL(page, `${origin}/callback?`);
  const creds = await auth.credentials();
  assert.equal(creds.length, 1, "one credential in the authenticator");
  assert.equal(creds[0].rpId, "localhost");
  assert.equal(creds[0].isResidentCredential, true);
  const { claims } = await redeem(page.url(), app);
  assert.deepEqual(claims.amr, ["email_otp"], `amr of a code sign-in: ${JSON.stringify(claims)}`);
  // The user is told a passkey was added (a notice, not a code).
  const notices = await waitFor(async () => {
    const m = await messagesSince(email, mark);
    return m.length ? m : null;
  }, { what: "the passkey-added notice" });
  assert.ok(notices.every((m) => !m.code && !m.link), JSON.stringify(notices));
  assert.ok(notices.some((m) => /passkey/i.test(`${m.subject} ${m.text}`)), `the notice says what was added: ${JSON.stringify(notices.map((m) => m.subject))}`);
  state.passkey = { email, creds, first: creds, userId: claims.uuid };
});

test("passkeys: a fresh browser holding the same credential signs in from the field's autofill (conditional UI) on opening the page", async () => {
  assert.ok(state.passkey, "needs the previous step");
  const app = apps.P;
  const { email, creds } = state.passkey;
  const page = await (await context()).newPage();
  const auth = await authenticator(page, creds);
  const signCount = (await auth.credentials())[0].signCount;
  const mark = await gh.outboxMark(email);
  const begins = [];
  page.on("request", (r) => {
    if (r.url().endsWith(`/login/${app.id}/passkey/begin`)) begins.push(r.postData());
  });
  // The virtual authenticator answers the conditional request at once, as a
  // person choosing the passkey in the field's autofill would: nothing is pressed.
  await page.goto(`${ghLocal}/login/${app.id}`);
  await atURL(page, `${origin}/callback?`);
  assert.deepEqual(begins, ["{}"], "one discoverable ceremony (no identifier)");
  const { claims } = await redeem(page.url(), app);
  assert.equal(claims.uuid, state.passkey.userId, "the passkey's user");
  assert.ok(claims.amr?.includes("webauthn"), `amr: ${JSON.stringify(claims.amr)}`);
  state.passkey.creds = await auth.credentials();
  assert.ok(state.passkey.creds[0].signCount > signCount, "the authenticator signed");
  assert.deepEqual(await messagesSince(email, mark), [], "no code or link was sent");
});

test("passkeys: in a browser without conditional UI, the 'Sign in with a passkey' button asks for the typed address's passkeys and signs in (no code, no offer)", async () => {
  assert.ok(state.passkey, "needs the first passkey step");
  const app = apps.P;
  const { email, creds } = state.passkey;
  const page = await (await context({ conditionalUI: false })).newPage();
  const auth = await authenticator(page, creds);
  const signCount = (await auth.credentials())[0].signCount;
  const mark = await gh.outboxMark(email);
  const begins = [];
  page.on("request", (r) => {
    if (r.url().endsWith(`/login/${app.id}/passkey/begin`)) begins.push(r.postData());
  });
  await page.goto(`${ghLocal}/login/${app.id}`);
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await atURL(page, `${origin}/callback?`);
  assert.deepEqual(begins.map((b) => JSON.parse(b)), [{ identifier: email }], "one ceremony, for the typed address");
  const { claims } = await redeem(page.url(), app);
  assert.equal(claims.uuid, state.passkey.userId);
  assert.ok(claims.amr?.includes("webauthn"), `amr: ${JSON.stringify(claims.amr)}`);
  state.passkey.creds = await auth.credentials();
  assert.ok(state.passkey.creds[0].signCount > signCount, "the authenticator signed");
  assert.deepEqual(await messagesSince(email, mark), [], "no code or link was sent");
});

test("passkeys: as the second factor (mfa_policy optional): code, then 'Use your passkey'; no offer afterwards", async () => {
  assert.ok(state.passkey, "needs the first passkey step");
  const app = apps.P;
  const { email, creds } = state.passkey;
  // Without conditional UI: else the autofill would sign in with the passkey before the code is asked for.
  const ctx = await context({ conditionalUI: false });
  const page = await ctx.newPage();
  const auth = await authenticator(page, creds);
  await page.goto(`${ghLocal}/login/${app.id}`);
  await page.getByRole("button", { name: "Sign in with a passkey" }).waitFor(); // hosted.js said: passkeys here
  const code = await sendCode(page, email);
  await enterCode(page, code);
  await heading(page, "Use your passkey");
  assert.equal(new URL(page.url()).pathname, `/login/${app.id}/mfa`);
  const hosted = (await ctx.cookies(ghLocal)).find((c) => c.name === `__Host-gatehouse_app_${app.id}`);
  assert.equal(hosted, undefined, "no hosted session before the second factor");
  await audit(page, "second factor by passkey");
  await page.getByRole("button", { name: "Use your passkey" }).click();
  await atURL(page, `${origin}/callback?`);
  const { claims } = await redeem(page.url(), app);
  assert.equal(claims.uuid, state.passkey.userId);
  assert.ok(claims.amr?.includes("email_otp") && claims.amr?.includes("webauthn"), `amr: ${JSON.stringify(claims.amr)}`);
  state.passkey.creds = await auth.credentials();
});

test("passkeys: a browser without the passkey, asked for it as the second factor, says so and stays on the page", async () => {
  assert.ok(state.passkey, "needs the first passkey step");
  const app = apps.P;
  const ctx = await context({ conditionalUI: false });
  const page = await ctx.newPage();
  await authenticator(page); // empty
  await page.goto(`${ghLocal}/login/${app.id}`);
  await page.getByRole("button", { name: "Sign in with a passkey" }).waitFor();
  await enterCode(page, await sendCode(page, state.passkey.email));
  const use = page.getByRole("button", { name: "Use your passkey" });
  await use.click();
  const status = page.locator("#passkey-status");
  await waitFor(async () => (await status.innerText()).trim(), { timeout: 15_000, what: "the passkey status line" });
  assert.match(await status.innerText(), /Cancelled, or no passkey was available/);
  assert.equal(new URL(page.url()).pathname, `/login/${app.id}/mfa`);
  assert.equal(await use.isEnabled(), true, "the button can be pressed again");
});

test("passkeys: a copy of the passkey whose signature counter went backwards (a cloned authenticator) is refused on the login page", async () => {
  assert.ok(state.passkey?.first, "needs the first passkey step");
  const app = apps.P;
  const page = await (await context({ conditionalUI: false })).newPage();
  // The credential as it was made, before the signatures the steps above counted.
  await authenticator(page, state.passkey.first);
  await page.goto(`${ghLocal}/login/${app.id}`);
  const answer = page.waitForResponse((r) => r.url().endsWith(`/login/${app.id}/passkey`) && r.request().method() === "POST");
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  assert.equal((await answer).status(), 400);
  assert.match(await alertText(page), /That passkey did not sign you in/);
  await page.getByLabel("E-mail address").waitFor();
  assert.equal((await page.context().cookies(ghLocal)).find((c) => c.name === `__Host-gatehouse_app_${app.id}`), undefined, "not signed in");
  await audit(page, "login page after a refused passkey");
});

// --- passkeys on the account page -------------------------------------------------

test("account: add a passkey, rename it; confirmed by itself it cannot be removed (403 'Confirm it's you'); an e-mailed code confirms; removed", async () => {
  const app = apps.P;
  const email = `pk-account-${tag}@example.com`;
  const ctx = await context();
  const page = await ctx.newPage();
  const auth = await authenticator(page);
  await signInToAccount(page, ghLocal, app, email);
  await audit(page, "account page with two-step sign-in");

  // Add.
  await page.getByRole("button", { name: "Add a passkey" }).click();
  await heading(page, "Add a passkey");
  await audit(page, "add-a-passkey page");
  await page.getByRole("button", { name: "Create the passkey" }).click();
  await page.getByRole("status").filter({ hasText: "Passkey added." }).waitFor();
  assert.equal((await auth.credentials()).length, 1);
  const passkeys = page.locator("#passkeys");
  const original = await page.getByLabel(/^New name for /).inputValue();
  assert.match(original, /Chrome/, "named after the browser");

  // Rename.
  await page.getByLabel(`New name for ${original}`).fill("Work laptop");
  await passkeys.getByRole("button", { name: "Rename" }).click();
  await page.getByRole("status").filter({ hasText: "Passkey renamed." }).waitFor();
  assert.equal(await page.getByLabel("New name for Work laptop").inputValue(), "Work laptop");

  // Confirm it's you with this passkey (the step-up page's passkey form, hosted_account.js).
  await page.goto(`${ghLocal}/account/${app.id}/stepup`);
  await heading(page, "Confirm it's you");
  await audit(page, "step-up page (the ways)");
  await page.getByRole("button", { name: "Your passkey" }).click();
  await page.getByRole("button", { name: "Use my passkey" }).click();
  await page.getByRole("status").filter({ hasText: "that is confirmed" }).waitFor();

  // It cannot vouch for its own removal: the step-up page, 403.
  const removal = page.waitForResponse((r) => r.url().endsWith("/delete") && r.request().method() === "POST");
  await page.getByRole("button", { name: "Remove the passkey Work laptop" }).click();
  assert.equal((await removal).status(), 403);
  await heading(page, "Confirm it's you");
  assert.match(await alertText(page), /cannot confirm its own removal/);
  assert.equal(await page.getByRole("button", { name: "Your passkey" }).count(), 0, "the passkey is not offered to confirm its own removal");
  assert.equal(await page.getByRole("link", { name: "sign in again" }).getAttribute("href"), `/login/${app.id}?return=%2Faccount%2F${app.id}`);
  await audit(page, "step-up page after a refused change");

  // An e-mailed code confirms: a wrong one first.
  const mark = await gh.outboxMark(email);
  await page.getByRole("button", { name: `A code by e-mail to ${email}` }).click();
  const field = page.getByLabel(`The code we sent to ${email}`);
  await field.waitFor();
  await audit(page, "step-up code form");
  const code = await gh.lastCode(email, { after: mark });
  await field.fill(code === "000000" ? "111111" : "000000");
  await page.getByRole("button", { name: "Confirm" }).click();
  assert.match(await alertText(page), /not right/);
  await field.fill(code);
  await page.getByRole("button", { name: "Confirm" }).click();
  await page.getByRole("status").filter({ hasText: "that is confirmed" }).waitFor();
  await page.getByRole("button", { name: "Remove the passkey Work laptop" }).click();
  await page.getByRole("status").filter({ hasText: "Passkey removed" }).waitFor();
  assert.match(await passkeys.innerText(), /You have no passkeys/);
});

// --- magic links -------------------------------------------------------------------

/** askForLink sends app G's sign-in link from page (device A) and returns the waiting page's match number and the e-mailed link. */
async function askForLink(page, email) {
  const mark = await gh.outboxMark(email);
  await page.goto(`${gh.base}/login/${apps.G.id}`);
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Send me a sign-in link" }).click();
  await heading(page, "Check your e-mail");
  assert.equal(new URL(page.url()).pathname, `/login/${apps.G.id}/magic`);
  await page.getByText("Waiting for the link to be opened").waitFor(); // hosted.js is polling
  const match = Number(await page.locator("#match").innerText());
  assert.ok(match >= 10 && match <= 99, `match number ${match}`);
  const m = await gh.lastMessage(email, { after: mark, where: (x) => Boolean(x.link) });
  assert.ok(!(await page.locator("main").innerText()).includes(magicTokenFromLink(m.link)), "the page does not show the link");
  return { match, link: m.link };
}

test("magic link, another device: the waiting page's number is approved on device B, and device A's script moves on to the callback by itself", async () => {
  const email = `link-${tag}@example.com`;
  const a = await (await context()).newPage();
  const { match, link } = await askForLink(a, email);
  await audit(a, "magic-link waiting page");

  // Pressed before the link is opened (what a browser without JavaScript does): not yet, and the page waits on.
  const early = a.waitForResponse((r) => r.url().endsWith(`/login/${apps.G.id}/magic`) && r.request().method() === "POST");
  await a.getByRole("button", { name: "I've opened the link" }).click();
  assert.equal((await early).status(), 409);
  assert.match(await alertText(a), /The link has not been opened yet/);
  await heading(a, "Check your e-mail");
  assert.equal(Number(await a.locator("#match").innerText()), match, "the same number");
  await a.getByText("Waiting for the link to be opened").waitFor(); // polling again

  const b = await (await context({ userAgent: PHONE_UA })).newPage();
  await b.goto(link);
  await heading(b, "Was this you?");
  await audit(b, "consent page");
  const group = b.getByRole("group", { name: "Which number does that device show?" });
  await group.getByRole("radio", { name: String(match), exact: true }).check();
  const polls = [];
  a.on("response", (r) => {
    if (r.url().endsWith(`/login/${apps.G.id}/magic/status`)) polls.push(r.status());
  });
  await b.getByRole("button", { name: "Approve: sign in that device" }).click();
  await heading(b, "Approved");
  await audit(b, "consent page: approved");

  // Nothing is pressed on device A: its poll (every 4 s) sees the link done and submits the page's form.
  await atURL(a, `${origin}/callback?`, 15_000);
  assert.ok(polls.length >= 1 && polls.every((s) => s === 200), `status polls: ${JSON.stringify(polls)}`);
  const { claims } = await redeem(a.url(), apps.G);
  assert.ok(claims.uuid);
  // Device A holds the hosted session: the account page opens.
  await a.goto(`${gh.base}/account/${apps.G.id}`);
  await heading(a, "Your account");
  assert.match(await a.locator("main").innerText(), new RegExp(email.replace(/[.+]/g, "\\$&")));
  // Device B is not signed in.
  await b.goto(`${gh.base}/account/${apps.G.id}`);
  await atURL(b, `${gh.base}/login/${apps.G.id}?return=`);
});

test("magic link, another device: a wrong number there ends device A's waiting page with a sentence and the login form", async () => {
  const email = `link-wrong-${tag}@example.com`;
  const a = await (await context()).newPage();
  const { match, link } = await askForLink(a, email);
  const b = await (await context({ userAgent: PHONE_UA })).newPage();
  await b.goto(link);
  const radios = b.getByRole("group", { name: "Which number does that device show?" }).getByRole("radio");
  let wrong = null;
  for (let i = 0; i < (await radios.count()); i++) {
    const v = Number(await radios.nth(i).getAttribute("value"));
    if (v !== match) {
      wrong = v;
      break;
    }
  }
  assert.ok(wrong !== null);
  await b.getByRole("radio", { name: String(wrong), exact: true }).check();
  await b.getByRole("button", { name: "Approve: sign in that device" }).click();
  await heading(b, "Request denied");
  await audit(b, "consent page: wrong number");

  const alert = a.getByRole("alert");
  await alert.waitFor({ timeout: 15_000 });
  assert.match(await alert.innerText(), /denied on the device that opened the link/);
  assert.equal(new URL(a.url()).pathname, `/login/${apps.G.id}/magic`, "the check form's answer");
  await a.getByLabel("E-mail address").waitFor();
  await audit(a, "login page after a denied link");
  const jar = await a.context().cookies(gh.base);
  assert.equal(jar.find((c) => c.name === `__Host-gatehouse_app_${apps.G.id}`), undefined, "not signed in");
});

test("magic link, same device: the link lands on the hosted page, Continue signs in; the waiting tab then offers 'Continue as …'", async () => {
  const email = `link-same-${tag}@example.com`;
  const ctx = await context();
  const waiting = await ctx.newPage();
  const { link } = await askForLink(waiting, email);

  const tab = await ctx.newPage(); // the e-mail opened in another tab of the same browser
  await tab.goto(link);
  assert.equal(new URL(tab.url()).pathname, `/login/${apps.G.id}/magic/open`, "the link's route sent it back to the hosted page");
  await heading(tab, "Sign in");
  assert.match(await tab.locator("main").innerText(), /You opened your sign-in link for Link shop/);
  await audit(tab, "magic-link landing page");
  await tab.getByRole("button", { name: "Continue" }).click();
  await atURL(tab, `${origin}/callback?`);
  const { claims } = await redeem(tab.url(), apps.G);
  assert.ok(claims.uuid);

  // The waiting tab's poll finds its link gone and reloads: the browser is signed in.
  await waiting.bringToFront();
  await waiting.getByRole("button", { name: `Continue as ${email}` }).waitFor({ timeout: 15_000 });
  await audit(waiting, "login page with Continue as");
  await waiting.getByRole("button", { name: `Continue as ${email}` }).click();
  await atURL(waiting, `${origin}/callback?`);
  const again = await redeem(waiting.url(), apps.G);
  assert.equal(again.claims.uuid, claims.uuid);
});

// --- sign-up fields and the profile ----------------------------------------------

test("sign-up fields: a new address is asked for the registration fields (a bad phone refused by its field), then the account page edits the profile", async () => {
  const app = apps.R;
  const email = `signup-${tag}@example.com`;
  const page = await (await context()).newPage();
  await page.goto(`${gh.base}/account/${app.id}`);
  await enterCode(page, await sendCode(page, email));
  await heading(page, "Tell us about yourself");
  assert.equal(new URL(page.url()).pathname, `/login/${app.id}/register`);
  assert.equal(await page.getByLabel("Plan").count(), 0, "a field not visible at registration");
  await audit(page, "registration page");
  await page.getByLabel("Company").fill("Initech");
  await page.getByLabel(/^Mobile/).fill("12345");
  const saved = page.waitForResponse((r) => r.url().endsWith(`/login/${app.id}/register`) && r.request().method() === "POST");
  await page.getByRole("button", { name: "Continue" }).click();
  assert.equal((await saved).status(), 422);
  assert.match(await alertText(page), /check the fields marked below/);
  const mobile = page.getByLabel(/^Mobile/);
  assert.equal(await mobile.getAttribute("aria-invalid"), "true");
  const described = await mobile.getAttribute("aria-describedby");
  assert.match(await page.locator(`#${described}`).innerText(), /must be a phone number in international format/);
  assert.equal(await page.getByLabel("Company").inputValue(), "Initech", "what was typed stays");
  await audit(page, "registration page with a refused field");
  await mobile.fill("+14155550123");
  await page.getByRole("button", { name: "Continue" }).click();
  await heading(page, "Your account");
  assert.equal(page.url(), `${gh.base}/account/${app.id}`);

  // The profile: the registration's values, editable.
  const profile = page.locator("#profile");
  assert.equal(await profile.getByLabel("Company").inputValue(), "Initech");
  assert.equal(await profile.getByLabel("Mobile").inputValue(), "+14155550123");
  assert.equal(await profile.getByLabel("Plan").count(), 0, "a field not visible in the profile");
  await audit(page, "account page with a profile");
  await profile.getByLabel("Company").fill("Initrode");
  await profile.getByLabel("Newsletter").check();
  await profile.getByLabel("Mobile").fill("not a number");
  await profile.getByRole("button", { name: "Save profile" }).click();
  assert.match(await alertText(page), /Not saved: check the fields marked below/);
  assert.match(await page.locator("#profile").innerText(), /Mobile must be a phone number in international format/);
  await audit(page, "account page with a refused profile");
  await page.locator("#profile").getByLabel("Mobile").fill("");
  await page.locator("#profile").getByRole("button", { name: "Save profile" }).click();
  await page.getByRole("status").filter({ hasText: "Profile saved." }).waitFor();
  await page.reload();
  assert.equal(await page.locator("#profile").getByLabel("Company").inputValue(), "Initrode");
  assert.equal(await page.locator("#profile").getByLabel("Newsletter").isChecked(), true);
  assert.equal(await page.locator("#profile").getByLabel("Mobile").inputValue(), "", "an emptied field is removed");

  // The API sees what the page saved.
  const secret = await gh.appSecret(app.id);
  const res = await fetch(`${gh.base}/v1/${app.id}/users?email=${encodeURIComponent(email)}`, { headers: { Authorization: `Bearer ${secret}` } });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const user = body.user ?? body.users?.[0] ?? body;
  assert.equal(user.user_meta?.company, "Initrode", JSON.stringify(user));
  assert.equal(user.user_meta?.newsletter, true, JSON.stringify(user));
  assert.equal(user.user_meta?.mobile ?? null, null, JSON.stringify(user));
});

// --- authenticator app, backup codes, step-up ------------------------------------

test("account: an authenticator app (key shown once; a wrong code asks again without it), backup codes shown once, step-up by TOTP and by a backup code, removal", async () => {
  const app = apps.A;
  const email = `totp-${tag}@example.com`;
  const page = await (await context()).newPage();
  await signInToAccount(page, gh.base, app, email);
  const mfa = page.locator("#mfa");
  assert.match(await mfa.innerText(), /No authenticator app is set up/);

  // Set up.
  await page.getByLabel("Name of the new authenticator app (optional)").fill("Phone");
  await page.getByRole("button", { name: "Set up an authenticator app" }).click();
  await heading(page, "Add an authenticator app");
  await audit(page, "authenticator app set-up page");
  const secret = (await page.locator("#totp-secret").innerText()).trim();
  assert.match(secret, /^[A-Z2-7]{16,}$/);
  assert.ok(await page.getByRole("img", { name: /QR code/ }).isVisible());
  await page.getByText("Setup link").click();
  const uri = await page.locator("details code").innerText();
  assert.ok(uri.startsWith("otpauth://totp/") && uri.includes(`secret=${secret}`), uri);
  const totp = new TOTP(secret);
  await page.getByLabel("The six-digit code from the app").fill(wrongTOTP(secret));
  await page.getByRole("button", { name: "Confirm" }).click();
  assert.match(await alertText(page), /not right/);
  assert.ok(!(await page.content()).includes(secret), "the key is not shown again");
  await audit(page, "authenticator app page after a wrong code");
  await page.getByLabel("The six-digit code from the app").fill(totp.next());
  await page.getByRole("button", { name: "Confirm" }).click();
  await page.getByRole("status").filter({ hasText: "Authenticator app added" }).waitFor();
  assert.ok(await page.getByRole("button", { name: "Remove the authenticator app Phone" }).isVisible());
  assert.ok(!(await page.content()).includes(secret), "the account page never shows the key");

  // Backup codes: shown once.
  await page.getByRole("button", { name: "Make backup codes" }).click();
  await heading(page, "Your backup codes");
  await audit(page, "backup codes page");
  const codes = (await page.locator("ul.codes code").allInnerTexts()).map((s) => s.trim());
  assert.equal(codes.length, 10, JSON.stringify(codes));
  assert.ok(codes.every((c) => /^[A-Z0-9]{5}-[A-Z0-9]{5}$/.test(c)), JSON.stringify(codes));
  await page.getByRole("link", { name: "Back to your account" }).click();
  await heading(page, "Your account");
  assert.match(await mfa.innerText(), /You have 10 unused backup codes/);
  const html = await page.content();
  assert.ok(codes.every((c) => !html.includes(c)), "the account page never shows the codes");

  // Step-up by the authenticator app: a wrong code, then the next code.
  await page.goto(`${gh.base}/account/${app.id}/stepup`);
  for (const way of ["A code from your authenticator app", `A code by e-mail to ${email}`, "One of your backup codes"]) {
    assert.ok(await page.getByRole("button", { name: way }).isVisible(), `the step-up page offers "${way}"`);
  }
  await page.getByRole("button", { name: "A code from your authenticator app" }).click();
  const field = page.getByLabel("The code from your authenticator app");
  await field.fill(wrongTOTP(secret));
  await page.getByRole("button", { name: "Confirm" }).click();
  assert.match(await alertText(page), /not right/);
  await audit(page, "step-up by TOTP with a wrong code");
  await field.fill(totp.next());
  await page.getByRole("button", { name: "Confirm" }).click();
  await page.getByRole("status").filter({ hasText: "that is confirmed" }).waitFor();
  assert.match(await page.locator("main").innerText(), /You signed in recently: until \d{4}-\d\d-\d\d \d\d:\d\d UTC/);

  // Confirmed by this app, it cannot vouch for its own removal.
  const removal = page.waitForResponse((r) => r.url().endsWith("/delete") && r.request().method() === "POST");
  await page.getByRole("button", { name: "Remove the authenticator app Phone" }).click();
  assert.equal((await removal).status(), 403);
  await heading(page, "Confirm it's you");
  assert.match(await alertText(page), /cannot confirm its own removal/);
  assert.equal(await page.getByRole("button", { name: "A code from your authenticator app" }).count(), 0, "the app is not offered to confirm its own removal");

  // A backup code confirms (and is spent); then the app goes.
  await page.getByRole("button", { name: "One of your backup codes" }).click();
  await page.getByLabel("One of your backup codes").fill(codes[3]);
  await page.getByRole("button", { name: "Confirm" }).click();
  await page.getByRole("status").filter({ hasText: "that is confirmed" }).waitFor();
  assert.match(await mfa.innerText(), /You have 9 unused backup codes/);
  await page.getByRole("button", { name: "Remove the authenticator app Phone" }).click();
  await page.getByRole("status").filter({ hasText: "Authenticator app removed." }).waitFor();
  assert.match(await mfa.innerText(), /No authenticator app is set up/);
});

// --- e-mail change ---------------------------------------------------------------------

test("account: changing the e-mail address: another user's is refused; a code to the new one (a wrong one first) makes it the user's; the old one is told", async () => {
  const app = apps.A;
  const email = `change-${tag}@example.com`;
  const newAddr = `changed-${tag}@example.com`;
  const taken = `taken-${tag}@example.com`;
  // Another user of the app.
  await signInToAccount(await (await context()).newPage(), gh.base, app, taken);
  const page = await (await context()).newPage();
  await signInToAccount(page, gh.base, app, email);
  const contact = page.locator("#contact");

  const mark0 = await gh.outboxMark(taken);
  const refused = page.waitForResponse((r) => r.url().endsWith(`/account/${app.id}/contact`) && r.request().method() === "POST");
  await contact.getByLabel("New e-mail address").fill(taken);
  await contact.getByRole("button", { name: "Send a code to this address" }).click();
  assert.equal((await refused).status(), 409);
  assert.match(await alertText(page), /Another user has this e-mail address/);
  assert.deepEqual(await messagesSince(taken, mark0), [], "nothing is sent to the other user's address");
  assert.equal(new URL(page.url()).pathname, `/account/${app.id}/contact`);
  await audit(page, "account page with a refused address");

  const oldMark = await gh.outboxMark(email);
  const mark = await gh.outboxMark(newAddr);
  await page.locator("#contact").getByLabel("New e-mail address").fill(newAddr);
  await page.locator("#contact").getByRole("button", { name: "Send a code to this address" }).click();
  await heading(page, "Enter your code");
  assert.match(await page.locator("main").innerText(), new RegExp(`We sent a code to ${newAddr.replace(/[.+]/g, "\\$&")}`));
  await audit(page, "e-mail change code page");
  const code = await gh.lastCode(newAddr, { after: mark });
  await page.getByLabel("Code").fill(code === "000000" ? "111111" : "000000");
  await page.getByRole("button", { name: "Verify" }).click();
  assert.match(await alertText(page), /not right/);
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Verify" }).click();
  await page.getByRole("status").filter({ hasText: "your new address is verified and in use" }).waitFor();
  assert.match(await page.locator("main").innerText(), new RegExp(`Signed in as ${newAddr.replace(/[.+]/g, "\\$&")}`));
  const told = await waitFor(async () => {
    const m = await messagesSince(email, oldMark);
    return m.length ? m : null;
  }, { what: "a notice to the old address" });
  assert.ok(told.every((m) => !m.code && !m.link), "a notice, with no code or link");
  assert.ok(told.some((m) => /e-mail address of your account was changed/.test(m.text)), JSON.stringify(told.map((m) => m.subject)));
  assert.ok(told.every((m) => !m.text.includes(newAddr)), "the notice does not spell out the new address");
});

// --- refusals -------------------------------------------------------------------------------

test("refusals: a wrong code shows role=alert and the form again; five wrong codes end the code; a new code then signs in", async () => {
  const app = apps.A;
  const email = `wrong-${tag}@example.com`;
  const page = await (await context()).newPage();
  await page.goto(`${gh.base}/login/${app.id}`);
  const code = await sendCode(page, email);
  const wrong = code === "000000" ? "111111" : "000000";
  for (let i = 1; i <= 5; i++) {
    const answer = page.waitForResponse((r) => r.url().endsWith(`/login/${app.id}/code`) && r.request().method() === "POST");
    await enterCode(page, wrong);
    assert.equal((await answer).status(), 422, `wrong code ${i}`);
    assert.match(await alertText(page), /That code is not right, or it has expired/);
    assert.ok(await page.getByLabel("Code").isVisible(), "the form again");
  }
  await audit(page, "code page with a wrong code");
  // The code is spent: even the right one is refused now.
  const answer = page.waitForResponse((r) => r.url().endsWith(`/login/${app.id}/code`) && r.request().method() === "POST");
  await enterCode(page, code);
  assert.equal((await answer).status(), 429, "the right code after five wrong ones");
  assert.match(await alertText(page), /Too many wrong codes/);
  assert.equal((await page.context().cookies(gh.base)).find((c) => c.name === `__Host-gatehouse_app_${app.id}`), undefined, "not signed in");
  await audit(page, "code page with the code spent");

  await page.getByRole("link", { name: "Use another address, or send a new code" }).click();
  await enterCode(page, await sendCode(page, email));
  await atURL(page, `${origin}/callback?`);
});

test("refusals: the sixth send to one address within ten minutes is rate limited: 429, Retry-After, and the sentence on the login page", async () => {
  const app = apps.A;
  const email = `limit-${tag}@example.com`;
  const page = await (await context()).newPage();
  for (let i = 1; i <= 5; i++) {
    await page.goto(`${gh.base}/login/${app.id}`);
    await sendCode(page, email);
  }
  await page.goto(`${gh.base}/login/${app.id}`);
  const answer = page.waitForResponse((r) => r.url().endsWith(`/login/${app.id}`) && r.request().method() === "POST");
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Send me a code" }).click();
  const res = await answer;
  assert.equal(res.status(), 429);
  const retry = Number(res.headers()["retry-after"]);
  assert.ok(retry >= 1, `Retry-After: ${res.headers()["retry-after"]}`);
  assert.match(await alertText(page), new RegExp(`Too many attempts\\. Wait ${retry} seconds, then try again\\.`));
  assert.equal(await page.getByLabel("E-mail address").inputValue(), email, "the login form again, with the address");
  await audit(page, "login page, rate limited");
});

test("no page reported a Content-Security-Policy violation or a script error", () => {
  assert.deepEqual(cspViolations, []);
  assert.deepEqual(pageErrors, []);
});
