// Scute's prebuilt UI (issue 27, item 5): the unmodified npm @scute/ui-react
// 1.2.2 (<Auth /> and <Profile />) on @scute/core 1.2.2 and React 18.3.1,
// bundled at test time with the pinned esbuild (ui-react-app/app.jsx, nothing
// patched), served from http://localhost:<port> (a secure context: WebAuthn
// works, RP id "localhost") to headless Chromium driven by playwright-core,
// against the real binary (serve --dev). The user only clicks and types in
// the UI; the e-mailed codes and links come from the dev outbox.
//
//   an e-mailed code (new address, app on "otp") → "Skip and log in" →
//   magic link on the same device (a second tab opens it; both sign in) →
//   magic link cross-device: another browser on the same machine opens it
//   (the first polls every 5 s), and a phone approves it on the consent page
//   (the number it asks for is read off the wire: the 1.2.2 UI does not show
//   match_number) →
//   passkey: "Register Device" on the UI's device-registration view after a
//   link sign-in (CDP virtual authenticator), "Log out", then "Sign in" takes
//   the passkey path with no message sent →
//   <Profile /> lists the user's sessions (device name, browser, platform,
//   last IP, last used; the passkey ones with the passkey icon) and revokes
//   a passkey session.
//
// What the 1.2.2 UI cannot do against Gatehouse is a test.todo below with
// the reason (see also e2e/sdk/README.md).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium, serveApp, waitFor, magicTokenFromLink, decodeJwt } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const SUITE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PINNED = { "@scute/ui-react": "1.2.2", "@scute/core": "1.2.2", react: "18.3.1", "react-dom": "18.3.1" };
// The UI polls the magic link's status every 5 s (VerifyMagicLinkOtp: useInterval 5e3).
const POLL_WAIT = 15_000;
const PHONE_UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const CODE_EMAIL = `ui-code-${tag}@example.com`;
const EMAIL = `ui-${tag}@example.com`;

/**
 * bundleUi bundles ui-react-app/app.jsx with the installed, unmodified
 * @scute/ui-react, @scute/core and React (their "import" entries) into one
 * browser script, and checks the versions are the pinned ones.
 */
async function bundleUi() {
  for (const [name, version] of Object.entries(PINNED)) {
    const pkg = JSON.parse(fs.readFileSync(path.join(SUITE_DIR, "node_modules", name, "package.json"), "utf8"));
    assert.equal(pkg.version, version, `the installed ${name} is not the pinned ${version} (run npm ci)`);
  }
  const result = await esbuild.build({
    entryPoints: [path.join(SUITE_DIR, "ui-react-app/app.jsx")],
    absWorkingDir: SUITE_DIR,
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    // The UI imports react-international-phone's stylesheet: esbuild writes it
    // next to the script (in memory), and the script puts it in a <style>.
    outdir: "out",
    write: false,
    logLevel: "silent",
    metafile: true,
  });
  const inputs = Object.keys(result.metafile.inputs);
  for (const want of ["node_modules/@scute/ui-react/dist/index.mjs", "node_modules/@scute/core/dist/index.mjs"]) {
    assert.ok(inputs.includes(want), `${want} is not in the bundle's inputs`);
  }
  const js = result.outputFiles.find((f) => f.path.endsWith(".js"));
  const css = result.outputFiles.find((f) => f.path.endsWith(".css"));
  const style = css ? `(()=>{const s=document.createElement("style");s.textContent=${JSON.stringify(css.text)};document.head.appendChild(s);})();\n` : "";
  return style + js.text;
}

function pageHtml(config) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>UI test app</title></head>
<body>
<script>
window.__config = ${JSON.stringify(config)};
window.__events = [];
window.__rejections = [];
window.addEventListener("unhandledrejection", (e) => {
  const r = e.reason;
  window.__rejections.push(r && (r.stack || r.message) ? String(r.message || r.stack) : String(r));
});
</script>
<div id="root"></div>
<script src="/scute.js"></script>
</body></html>`;
}

let gh, browser, appServers, origin, app;
const contexts = [];
/** Every response any page saw: {ctx, method, path, status, body?}. */
const seen = [];
const state = {};

before(async () => {
  const bundle = await bundleUi();
  gh = await startGatehouse();
  const served = await serveApp({ bundle, paths: ["/"], page: () => pageHtml({ appId: app.id, baseUrl: gh.base }) });
  appServers = served.servers;
  origin = served.origin;
  // One identifier (e-mail): the UI signs a new address up at once, with no registration form.
  app = await gh.createApp({ name: "UI React test app", origin, login_url: `${origin}/`, allowed_identifiers: ["email"], email_auth_type: "otp" });
  assert.ok(app.id, `created app: ${JSON.stringify(app)}`);
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

/** newContext opens a browser context (a device of its own) that records every response and accepts dialogs. */
async function newContext(name, opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 }, ...opts });
  contexts.push(ctx);
  ctx.on("response", async (r) => {
    const u = new URL(r.url());
    const entry = { ctx: name, method: r.request().method(), path: u.pathname, status: r.status() };
    seen.push(entry);
    if (u.pathname.endsWith("/magic_links/login") || u.pathname.endsWith("/magic_links/register")) {
      entry.body = await r.json().catch(() => null);
    }
  });
  // <Profile /> asks window.confirm before a revoke and says "Success!" after adding a device.
  ctx.on("page", (p) => p.on("dialog", (d) => d.accept()));
  return ctx;
}

/** openApp opens the app in ctx, optionally with a CDP virtual authenticator, and waits for the UI to render. */
async function openApp(ctx, { authenticator = false, url = `${origin}/` } = {}) {
  const page = await ctx.newPage();
  const logs = [];
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  let cdp, authenticatorId;
  if (authenticator) {
    cdp = await ctx.newCDPSession(page);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    ({ authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    }));
  }
  if (url) await page.goto(url);
  return { page, logs, cdp, authenticatorId };
}

/** appState waits until the app says the session is `want` (authenticated or unauthenticated). */
async function waitState(p, want, timeout = 10_000) {
  try {
    await p.page.getByTestId("app-state").filter({ hasText: new RegExp(`^${want}$`) }).waitFor({ timeout });
  } catch (e) {
    const events = await p.page.evaluate(() => window.__events.join(", ")).catch(() => "?");
    const shown = await p.page.getByTestId("app-state").textContent().catch(() => "?");
    if (process.env.GATEHOUSE_E2E_KEEP) await p.page.screenshot({ path: path.join(gh.root, `state-${Date.now()}.png`) }).catch(() => {});
    throw new Error(`the app is not ${want} after ${timeout} ms (${shown}; events: ${events}); page log:\n${p.logs.join("\n")}\n${e.message}`);
  }
}

/** enterIdentifier types the address into the UI's identifier field and submits. */
async function enterIdentifier(p, email) {
  await p.page.getByLabel("Your email").fill(email);
  await p.page.getByRole("button", { name: /Sign up or Log in/ }).click();
}

const calls = (ctx, method, suffix, from = 0) => seen.slice(from).filter((c) => c.ctx === ctx && c.method === method && c.path.endsWith(suffix));

/** session returns the page's session status, access token claims and user (through the SDK the UI uses). */
async function session(p) {
  return p.page.evaluate(async () => {
    const s = await window.client.getSession();
    return { status: s.data?.session?.status ?? null, access: s.data?.session?.access ?? null, user: s.data?.user ?? null };
  });
}

async function rejections(p) {
  return p.page.evaluate(() => window.__rejections.slice());
}

async function credentials({ cdp, authenticatorId }) {
  const { credentials: list } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  return list.map((c) => ({ ...c, id: Buffer.from(c.credentialId, "base64").toString("base64url") }));
}

/**
 * passkeySignInByHand runs in the page: a discoverable passkey sign-in
 * against Gatehouse with fetch and navigator.credentials.get, whose tokens
 * it drops (a session the UI's client does not hold).
 */
async function passkeySignInByHand({ baseUrl, appId }) {
  const dec = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0)).buffer;
  const enc = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/[+]/g, "-").replace(/[/]/g, "_").replace(/=+$/, "");
  const url = (r) => `${baseUrl}/v1/auth/${appId}${r}`;
  const init = await fetch(url("/webauthn/login/initialize"), { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  const o = (await init.json()).options;
  const cred = await navigator.credentials.get({ publicKey: { challenge: dec(o.challenge), rpId: o.rpId, userVerification: o.userVerification, allowCredentials: [] } });
  const res = await fetch(url("/webauthn/login/finalize"), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      id: cred.id, rawId: enc(cred.rawId), type: cred.type,
      response: { clientDataJSON: enc(cred.response.clientDataJSON), authenticatorData: enc(cred.response.authenticatorData),
        signature: enc(cred.response.signature), userHandle: cred.response.userHandle ? enc(cred.response.userHandle) : null },
      clientExtensionResults: {},
    }),
  });
  return { status: res.status };
}

// --- the steps ----------------------------------------------------------------

test("the bundle is the unmodified @scute/ui-react 1.2.2 and the app renders <Auth /> with Gatehouse's app data", async () => {
  const ctx = await newContext("first");
  const p = await openApp(ctx);
  await waitState(p, "unauthenticated");
  // Container: the app's name from GET /v1/apps/{app} (appData.name).
  await p.page.getByText("UI React test app", { exact: true }).first().waitFor();
  await p.page.getByText("Continue to UI React test app").waitFor();
  await p.page.getByLabel("Your email").waitFor();
  assert.deepEqual(await rejections(p), []);
  await ctx.close();
});

test("code: a new address signs up by the e-mailed code (app on otp), skips the passkey offer and is signed in", async () => {
  const ctx = await newContext("code");
  const p = await openApp(ctx);
  await waitState(p, "unauthenticated");
  const mark = await gh.outboxMark(CODE_EMAIL);
  const from = seen.length;
  await enterIdentifier(p, CODE_EMAIL);
  // VerifyManualOtp: six boxes (react-otp-input), "Verify OTP".
  await p.page.getByText(/Enter the code from your email/).waitFor();
  assert.equal(calls("code", "POST", "/otps/login", from).length, 1, "the UI sent a code (POST /otps/login)");
  const code = await gh.lastCode(CODE_EMAIL, { after: mark });
  assert.match(code, /^[0-9]{6}$/, "a 6-digit code, as the UI's six boxes expect");
  await p.page.locator("input.otp-input").first().click();
  await p.page.keyboard.type(code);
  await p.page.getByRole("button", { name: /Verify OTP/ }).click();
  // RegisterDevice: the passkey offer after a code sign-in.
  await p.page.getByText("Enable passkey").waitFor();
  await p.page.getByRole("button", { name: "Skip and log in" }).click();
  await waitState(p, "authenticated");
  const s = await session(p);
  assert.equal(s.user?.email, CODE_EMAIL);
  assert.deepEqual(decodeJwt(s.access).amr ?? ["email_otp"], ["email_otp"]);
  await p.page.getByText("My profile").waitFor();
  assert.deepEqual(await rejections(p), []);
  await ctx.close();
});

test.todo(
  "code: an existing e-mail address signs in by code — the 1.2.2 UI cannot: SignInOrUp sends a known e-mail address a magic link " +
    "(sendLoginMagicLink) whatever the app's email_auth_type; only phone numbers and new addresses get a code (a UI limitation, not a missing field)",
);

test("magic link, same device: a second tab opens the link, lands on the app with sct_magic, and both tabs sign in", async () => {
  await gh.patchApp(app.id, { email_auth_type: "magic" });
  const ctx = await newContext("same");
  const a = await openApp(ctx);
  await waitState(a, "unauthenticated");
  const mark = await gh.outboxMark(EMAIL);
  await enterIdentifier(a, EMAIL); // a new address: signUp → POST /magic_links/register
  await a.page.getByText(/To keep your account secure, we need to verify it.s you. Check your email/).waitFor();
  const msg = await gh.lastMessage(EMAIL, { after: mark, where: (m) => Boolean(m.link) });
  const token = magicTokenFromLink(msg.link);

  const b = await openApp(ctx, { url: null });
  await b.page.goto(msg.link); // Gatehouse sees the device that asked: 303 to the app's login_url
  assert.equal(new URL(b.page.url()).origin, origin, `landed on ${b.page.url()}`);
  // The UI verified the token (PATCH /magic_links/authenticate) and offers a passkey.
  await b.page.getByText("Enable passkey").waitFor();
  assert.equal(new URL(b.page.url()).searchParams.get("sct_magic"), null, "the UI removed sct_magic from the address");
  await b.page.getByRole("button", { name: "Skip and log in" }).click();
  await waitState(b, "authenticated");
  // The first tab polls every 5 s: its poll (or the tab broadcast) signs it in too.
  await waitState(a, "authenticated", POLL_WAIT);
  const [sa, sb] = [await session(a), await session(b)];
  assert.equal(sa.user?.email, EMAIL);
  assert.equal(sb.user?.email, EMAIL);
  assert.ok(decodeJwt(sb.access).uuid, "a user id in the access token");
  state.userId = decodeJwt(sb.access).uuid;
  assert.ok(token);
  assert.deepEqual(await rejections(a), []);
  assert.deepEqual(await rejections(b), []);
  await ctx.close();
});

test("magic link, cross-device: another browser on this machine opens the link; the first one's 5-second poll signs it in", async () => {
  const ctxA = await newContext("crossA");
  const a = await openApp(ctxA);
  await waitState(a, "unauthenticated");
  const mark = await gh.outboxMark(EMAIL);
  const from = seen.length;
  await enterIdentifier(a, EMAIL); // known: POST /magic_links/login
  await a.page.getByText(/Check your email/).waitFor();
  const msg = await gh.lastMessage(EMAIL, { after: mark, where: (m) => Boolean(m.link) });

  const ctxB = await newContext("crossB"); // its own storage and cookies: another browser
  const b = await openApp(ctxB, { url: null });
  await b.page.goto(msg.link);
  await b.page.getByText("Enable passkey").waitFor();
  await b.page.getByRole("button", { name: "Skip and log in" }).click();
  await waitState(b, "authenticated");
  // A learns of it only by its own polling (no shared storage): every 5 s.
  await waitState(a, "authenticated", POLL_WAIT);
  const polls = calls("crossA", "POST", "/magic_links/status", from);
  assert.ok(polls.length >= 1, "the UI polled the link's status");
  assert.equal(polls.at(-1).status, 200, `the last poll: ${JSON.stringify(polls)}`);
  assert.ok(polls.slice(0, -1).every((c) => c.status === 409), `pending polls answer 409: ${JSON.stringify(polls)}`);
  const [sa, sb] = [await session(a), await session(b)];
  assert.equal(sa.user?.email, EMAIL);
  assert.notEqual(decodeJwt(sa.access).sid ?? sa.access, decodeJwt(sb.access).sid ?? sb.access, "two devices, two sessions");
  assert.deepEqual(await rejections(a), []);
  assert.deepEqual(await rejections(b), []);
  await ctxA.close();
  await ctxB.close();
});

test("magic link, cross-device: a phone approves on the consent page with the number; the waiting UI's poll signs it in", async () => {
  const ctxA = await newContext("phoneA");
  const a = await openApp(ctxA);
  await waitState(a, "unauthenticated");
  const mark = await gh.outboxMark(EMAIL);
  const from = seen.length;
  await enterIdentifier(a, EMAIL);
  await a.page.getByText(/Check your email/).waitFor();
  const asked = await waitFor(() => calls("phoneA", "POST", "/magic_links/login", from).find((c) => c.body), { what: "the /magic_links/login answer" });
  const number = asked.body.magic_link.match_number;
  assert.ok(Number.isInteger(number), `match_number in ${JSON.stringify(asked.body)}`);
  // The 1.2.2 UI never shows it (it reads only magic_link.id): a person could not answer the page below.
  assert.equal(await a.page.getByText(String(number), { exact: true }).count(), 0, "the 1.2.2 UI shows no match number");
  const msg = await gh.lastMessage(EMAIL, { after: mark, where: (m) => Boolean(m.link) });

  const ctxB = await newContext("phoneB", { userAgent: PHONE_UA, javaScriptEnabled: false, viewport: { width: 390, height: 800 } });
  const b = await ctxB.newPage();
  await b.goto(msg.link);
  await b.getByRole("heading", { name: "Was this you?" }).waitFor();
  await b.getByRole("radio", { name: String(number), exact: true }).check();
  await b.getByRole("button", { name: /^Approve/ }).click();
  await b.getByRole("heading", { name: "Approved" }).waitFor();
  await waitState(a, "authenticated", POLL_WAIT);
  assert.equal((await session(a)).user?.email, EMAIL);
  assert.deepEqual(await rejections(a), []);
  await ctxA.close();
  await ctxB.close();
});

test("passkey: after a link sign-in the UI's device-registration view registers a passkey (virtual authenticator)", async () => {
  await gh.patchApp(app.id, { email_auth_type: "magic" });
  const ctx = await newContext("passkey");
  const p = await openApp(ctx, { authenticator: true });
  state.passkey = p;
  await waitState(p, "unauthenticated");
  assert.equal((await credentials(p)).length, 0);
  const mark = await gh.outboxMark(EMAIL);
  await enterIdentifier(p, EMAIL);
  await p.page.getByText(/Check your email/).waitFor();
  const msg = await gh.lastMessage(EMAIL, { after: mark, where: (m) => Boolean(m.link) });
  await p.page.goto(msg.link); // the same tab (and authenticator): on to the app with sct_magic
  await p.page.getByText("Enable passkey").waitFor();
  const from = seen.length;
  await p.page.getByRole("button", { name: /Register Device/ }).click();
  await waitState(p, "authenticated");
  // @scute/core 1.2.2 emits signed_in 100 ms after the sign-in; a sign-out before it would be undone by it.
  await waitFor(() => p.page.evaluate(() => window.__events.includes("signed_in")), { what: "the signed_in event" });
  assert.equal(calls("passkey", "POST", "/devices/finalize", from).at(-1)?.status, 200, "POST /devices/finalize");
  const creds = await credentials(p);
  assert.equal(creds.length, 1, "one credential in the authenticator");
  assert.equal(creds[0].rpId, "localhost");
  const s = await session(p);
  assert.equal(s.user?.webauthn_enabled, true, "the user is webauthn_enabled");
  assert.deepEqual(await p.page.evaluate((uid) => window.client.getCredentialIds(uid), s.user.id), [creds[0].id]);
  state.credentialId = creds[0].id;
  assert.deepEqual(await rejections(p), []);
});

test("passkey: Log out in <Profile />, then Sign in (remembered address) takes the passkey path; no message is sent", async () => {
  const p = state.passkey;
  assert.ok(p && state.credentialId, "needs the registration step");
  await p.page.getByRole("button", { name: "Log out" }).click();
  await waitState(p, "unauthenticated");
  // The remembered identifier: "Welcome back", "Sign in as …".
  await p.page.getByText("Welcome back").waitFor();
  await p.page.getByText(EMAIL).waitFor();
  const mark = await gh.outboxMark(EMAIL);
  const from = seen.length;
  await p.page.getByRole("button", { name: /^Sign in/ }).click();
  await waitState(p, "authenticated");
  assert.equal(calls("passkey", "POST", "/webauthn/login/initialize", from).at(-1)?.status, 200);
  assert.equal(calls("passkey", "POST", "/webauthn/login/finalize", from).at(-1)?.status, 200);
  assert.equal(calls("passkey", "POST", "/magic_links/login", from).length, 0, "no link asked for");
  assert.deepEqual([...(await gh.outboxMark(EMAIL))].filter((id) => !mark.has(id)), [], "no new outbox message");
  const s = await session(p);
  const current = (s.user?.sessions ?? []).find((x) => x.current);
  assert.equal(current?.type, "webauthn", JSON.stringify(current));
  assert.equal(current?.credential_id, state.credentialId);
  assert.deepEqual(await rejections(p), []);
  state.signedInByPasskey = true;
});

test("<Profile /> lists the user's sessions and passkey devices, and revokes a passkey session", async () => {
  const p = state.passkey;
  assert.ok(p && state.signedInByPasskey, "needs the passkey steps");
  await p.page.getByText("My profile").waitFor();
  await p.page.getByText("Sessions", { exact: true }).waitFor();
  const user = (await session(p)).user;
  const sessions = user.sessions ?? [];
  assert.ok(sessions.length >= 1, `the user's sessions so far: ${sessions.length}`);
  // Every session the API lists is a card: its device name (nickname), browser, platform, last IP, last used.
  const cards = p.page.getByRole("button", { name: "Revoke" });
  await waitFor(async () => (await cards.count()) === sessions.length, { what: `${sessions.length} session cards` });
  const text = await p.page.locator("#root").innerText();
  for (const label of ["Last used", "Last IP", "Browser", "Platform"]) assert.ok(text.includes(label), `no "${label}" in the profile`);
  for (const s of sessions) {
    assert.ok(text.includes(s.nickname) && s.nickname, `nickname ${s.nickname}`);
    assert.ok(text.includes(s.last_used_at), `last_used_at ${s.last_used_at}`);
    assert.ok(text.includes(s.last_used_at_ip) && s.last_used_at_ip, `last_used_at_ip ${s.last_used_at_ip}`);
    assert.ok(text.includes(s.browser) && text.includes(s.platform), `browser ${s.browser} / platform ${s.platform}`);
  }
  // The passkey: the sessions it made carry its credential_id (shown with the UI's passkey icon), and this
  // device has one, so the "Register Device" button is gone (isAnyDeviceRegistered).
  const passkeySessions = sessions.filter((s) => s.type === "webauthn");
  assert.ok(passkeySessions.length >= 1);
  assert.ok(passkeySessions.every((s) => s.credential_id === state.credentialId));
  assert.equal(await p.page.getByRole("button", { name: /Register Device/ }).count(), 0);

  // Revoke, in <Profile />, a passkey session that is not this one: the SDK deletes it (DELETE /sessions/{id})
  // and forgets the credential id. That session is made here by a passkey sign-in by hand in the same page
  // (POST /webauthn/login/initialize {}, navigator.credentials.get, /finalize), which the UI's client does not see.
  const other = await p.page.evaluate(passkeySignInByHand, { baseUrl: gh.base, appId: app.id });
  assert.equal(other.status, 200, JSON.stringify(other));
  const otherId = await waitFor(async () => {
    const list = (await session(p)).user?.sessions ?? [];
    return list.length === sessions.length + 1 && list.find((s) => !sessions.some((x) => x.id === s.id))?.id;
  }, { what: "the second passkey session in current_user" });
  await p.page.evaluate(() => window.client.refetchSession());
  await waitFor(async () => (await cards.count()) === sessions.length + 1, { what: `${sessions.length + 1} session cards` });
  const list = (await session(p)).user.sessions;
  const index = list.findIndex((s) => s.id === otherId);
  assert.equal(list[index].type, "webauthn");
  assert.equal(list[index].credential_id, state.credentialId);
  const from = seen.length;
  await cards.nth(index).click(); // window.confirm is accepted
  const del = await waitFor(() => calls("passkey", "DELETE", `/sessions/${otherId}`, from)[0], { what: "DELETE /sessions/{id}" });
  assert.equal(del.status, 200);
  await waitFor(async () => (await cards.count()) === sessions.length, { what: "the revoked session's card gone" });
  assert.equal((await session(p)).status, "authenticated", "this session lives on");
  assert.deepEqual(await rejections(p), []);
});

test.todo(
  "<Profile />: Revoke on a session without a passkey — the SDK's revokeSession(id, null) looks the session up with " +
    "listUserSessions() and calls .find on GET /v1/auth/{app}/sessions' body, which Gatehouse sends as {sessions:[…]} " +
    "(client-compat §11, §13.3), so it throws a TypeError and sends no DELETE",
);
