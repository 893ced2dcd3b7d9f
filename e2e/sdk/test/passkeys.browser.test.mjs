// Passkeys (issue 9, client-compat §7 and §12.3) in a real browser: the
// unmodified @scute/core 1.2.2, bundled for the browser at test time with the
// pinned esbuild, runs in a page served from http://localhost:<port> (a secure
// context, so WebAuthn works; RP id "localhost") in headless Chromium driven by
// playwright-core, with a CDP virtual authenticator per page (ctap2, internal,
// resident keys, user verification). Against the real binary:
//
//   sign up and in by magic link → addDevice → sign out → signIn takes the
//   passkey path → a discoverable passkey sign-in (empty allowCredentials) →
//   a second browser without the credential falls back to a magic link, then
//   (app switched to OTP) to a code, finished with verifyOtp →
//   removeDeviceCredential → webauthn_enabled is false again.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startGatehouse, gatehouseBin, decodeJwt, isBase64url, waitFor, chromiumPath, launchChromium, bundleSdk, serveApp } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const EMAIL = `passkey-${tag}@example.com`;

/** The test page: records unhandled rejections and SDK events, then starts one ScuteClient. */
function pageHtml(config) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Passkeys test app</title></head>
<body><h1>Passkeys test app</h1>
<script>
window.__rejections = [];
window.addEventListener("unhandledrejection", (e) => {
  const r = e.reason;
  window.__rejections.push(r && (r.stack || r.message) ? String(r.message || r.stack) + (r.json ? " " + JSON.stringify(r.json) : "") : String(r));
});
window.__events = [];
</script>
<script src="/scute.js"></script>
<script>
window.__config = ${JSON.stringify(config)};
window.client = new Scute.ScuteClient({ appId: __config.appId, baseUrl: __config.baseUrl });
window.client.onAuthStateChange((event) => window.__events.push(event));
// The SDK loads the app's data in the background and signIn reads it without
// waiting: the test waits for this, as an app's first render does.
window.ready = window.client.getAppData().then((r) => (r.error ? String(r.error.message || r.error) : null));
// plain turns an SDK {data, error} result into something page.evaluate can return.
window.plain = (r) => {
  if (!r || typeof r !== "object") return { data: r ?? null, error: null };
  const e = r.error;
  let error = null;
  if (e) {
    const kinds = ["NewDeviceError", "IdentifierNotRecognizedError", "InvalidAuthTokenError", "LoginRequiredError",
      "UnknownSignInError", "InvalidMagicLinkError", "TechnicalError", "WebAuthnError", "BaseHttpError", "ScuteError"];
    const kind = kinds.find((k) => Scute[k] && e instanceof Scute[k]) || e.name || "Error";
    error = { kind, code: e.code ?? null, message: String(e.message ?? ""), json: e.json ?? null };
  }
  return { data: r.data ?? null, error };
};
// api calls Gatehouse directly, with the signed-in user's access token (routes the SDK has no method for).
window.api = async (method, route, body) => {
  const t = await window.client.getAuthToken();
  const headers = {};
  if (t.data && t.data.access) headers["X-Authorization"] = t.data.access;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(__config.baseUrl + "/v1/auth/" + __config.appId + route,
    { method, headers, credentials: "include", body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { json = text; }
  return { status: res.status, body: json };
};
// discoverableSignIn: a passkey sign-in with no identifier (empty allowCredentials), by hand:
// POST /webauthn/login/initialize {} → navigator.credentials.get → /webauthn/login/finalize.
window.discoverableSignIn = async () => {
  const b64u = {
    decode: (s) => {
      const b = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
      return Uint8Array.from(b, (c) => c.charCodeAt(0)).buffer;
    },
    encode: (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, "-").replace(/\\\//g, "_").replace(/=+$/, ""),
  };
  const url = (route) => __config.baseUrl + "/v1/auth/" + __config.appId + route;
  const init = await fetch(url("/webauthn/login/initialize"), {
    method: "POST", credentials: "include", headers: { "Content-Type": "application/json" }, body: "{}",
  });
  const initBody = await init.json();
  if (init.status !== 200) return { step: "initialize", status: init.status, body: initBody };
  const o = initBody.options || {};
  const publicKey = {
    challenge: b64u.decode(o.challenge),
    timeout: o.timeout,
    rpId: o.rpId,
    userVerification: o.userVerification,
    allowCredentials: (o.allowCredentials || []).map((c) => ({ ...c, id: b64u.decode(c.id) })),
  };
  let cred;
  try {
    cred = await navigator.credentials.get({ publicKey });
  } catch (e) {
    return { step: "get", error: e.name + ": " + e.message, options: o };
  }
  const body = {
    id: cred.id,
    rawId: b64u.encode(cred.rawId),
    type: cred.type,
    authenticatorAttachment: cred.authenticatorAttachment || undefined,
    response: {
      clientDataJSON: b64u.encode(cred.response.clientDataJSON),
      authenticatorData: b64u.encode(cred.response.authenticatorData),
      signature: b64u.encode(cred.response.signature),
      userHandle: cred.response.userHandle ? b64u.encode(cred.response.userHandle) : null,
    },
    clientExtensionResults: cred.getClientExtensionResults(),
  };
  const fin = await fetch(url("/webauthn/login/finalize"), {
    method: "POST", credentials: "include", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const finBody = await fin.json();
  if (fin.status !== 200) return { step: "finalize", status: fin.status, body: finBody, options: o, credentialId: cred.id };
  const signedIn = window.plain(await window.client.signInWithTokenPayload(finBody));
  return { step: "done", options: o, credentialId: cred.id, access: finBody.access, signedIn };
};
</script>
</body></html>`;
}

let gh, browser, appServers, origin, app, sdkBundle, appSecret;
const contexts = [];
/** Every response any page saw: {ctx, method, path, status}. */
const seen = [];
/** State carried from one step to the next. */
const state = {};

before(async () => {
  sdkBundle = await bundleSdk();
  gh = await startGatehouse();

  const served = await serveApp({ bundle: sdkBundle, paths: ["/", "/login"], page: () => pageHtml({ appId: app.id, baseUrl: gh.base }) });
  appServers = served.servers;
  origin = served.origin;

  app = await gh.createApp({ name: "Passkeys test app", origin, login_url: `${origin}/login` });
  assert.ok(app.id, `created app: ${JSON.stringify(app)}`);
  appSecret = await gh.appSecret(app.id);

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

/** newContext opens a browser context (a separate device: its own localStorage and cookies). */
async function newContext(name) {
  const ctx = await browser.newContext();
  contexts.push(ctx);
  ctx.on("response", (r) => {
    const u = new URL(r.url());
    seen.push({ ctx: name, method: r.request().method(), path: u.pathname, status: r.status() });
  });
  return ctx;
}

/**
 * openApp opens a page of the app with a CDP virtual authenticator of its own
 * (ctap2, internal, resident keys, user verification, presence simulated), and
 * waits until the SDK has the app's data.
 */
async function openApp(ctx, query = "") {
  const page = await ctx.newPage();
  const logs = [];
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const res = await page.goto(`${origin}/${query}`);
  assert.equal(res.status(), 200);
  const err = await page.evaluate(() => window.ready);
  assert.equal(err, null, `getAppData in the page failed: ${err}`);
  assert.equal(await page.evaluate(() => window.client.isWebauthnSupported()), true, "WebAuthn is supported in the page");
  return { page, cdp, authenticatorId, logs };
}

/** credentials lists the virtual authenticator's credentials, with base64url ids. */
async function credentials({ cdp, authenticatorId }) {
  const { credentials: list } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  return list.map((c) => ({ ...c, id: Buffer.from(c.credentialId, "base64").toString("base64url") }));
}

/** sdk runs `client.<method>(...args)` in the page and returns its {data, error} made plain. */
async function sdk(p, method, ...args) {
  return p.page.evaluate(async ({ method, args }) => window.plain(await window.client[method](...args)), { method, args });
}

/** ok asserts that an SDK result has no error and returns its data. */
function ok(res, what, p) {
  assert.equal(res.error, null, `${what} failed: ${JSON.stringify(res.error)}${p ? `\npage log:\n${p.logs.join("\n")}` : ""}`);
  return res.data;
}

/** lookup returns the user as the SDK's identifier lookup sees it (GET /v1/auth/{app}/users?identifier=). */
async function lookup(identifier) {
  const res = await fetch(`${gh.base}/v1/auth/${app.id}/users?identifier=${encodeURIComponent(identifier)}`);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.user;
}

/** adminDevices lists a user's passkeys through the admin API (app secret). */
async function adminDevices(userId) {
  const res = await fetch(`${gh.base}/v1/${app.id}/users/${userId}/devices`, {
    headers: { Authorization: `Bearer ${appSecret}` },
  });
  const body = await res.json();
  assert.equal(res.status, 200, `GET /v1/{app}/users/{id}/devices = ${res.status} ${JSON.stringify(body)}`);
  return body.devices;
}

/** signedInUser returns the page's session status and the user id of its access token. */
async function signedInUser(p) {
  return p.page.evaluate(async () => {
    const s = await window.client.getSession();
    const t = await window.client.getAuthToken();
    return { status: s.data?.session?.status ?? null, access: t.data?.access ?? null, user: s.data?.user ?? null };
  });
}

const calls = (ctx, method, suffix, from = 0) =>
  seen.slice(from).filter((c) => c.ctx === ctx && c.method === method && c.path.endsWith(suffix));

/**
 * statuses waits until `want.length` responses to method+suffix were seen
 * since `from` (Playwright reports a response a moment after the page may
 * have used it), then returns the statuses of all of them.
 */
async function statuses(ctx, method, suffix, from, want) {
  if (want.length > 0) {
    await waitFor(() => calls(ctx, method, suffix, from).length >= want.length, { what: `${want.length} ${method} ${suffix}` });
  }
  return calls(ctx, method, suffix, from).map((c) => c.status);
}

const rejections = (p) => p.page.evaluate(() => window.__rejections.slice());

// --- the steps ----------------------------------------------------------------

test("device 1: sign up by magic link in the browser (the magic token says webauthnEnabled)", async () => {
  const ctx = await newContext("device1");
  let p = await openApp(ctx);
  const mark = await gh.outboxMark(EMAIL);
  ok(await sdk(p, "signInOrUp", EMAIL), "signInOrUp (sends a magic link)", p);
  const token = await gh.lastMagicToken(EMAIL, { after: mark });

  // The app page opened from the link, in the same tab (and so with the same authenticator).
  await p.page.goto(`${origin}/login?sct_magic=${encodeURIComponent(token)}`);
  assert.equal(await p.page.evaluate(() => window.ready), null);
  const verified = ok(
    await p.page.evaluate(async () => window.plain(await window.client.verifyMagicLinkToken(window.client.getMagicLinkToken()))),
    "verifyMagicLinkToken",
    p,
  );
  assert.ok(verified.authPayload?.access, `authPayload: ${JSON.stringify(Object.keys(verified.authPayload ?? {}))}`);
  // The browser sent webauthn_enabled: true, and a brand-new user has no passkey yet.
  assert.equal(typeof verified.magicPayload?.webauthnEnabled, "boolean", JSON.stringify(verified.magicPayload));
  ok(
    await p.page.evaluate(async (payload) => window.plain(await window.client.signInWithTokenPayload(payload)), verified.authPayload),
    "signInWithTokenPayload",
    p,
  );
  const s = await signedInUser(p);
  assert.equal(s.status, "authenticated");
  const user = await lookup(EMAIL);
  assert.equal(decodeJwt(s.access).uuid, user.id, "the access token's uuid is the user");
  assert.equal(user.webauthn_enabled, false, "no passkey yet");
  state.device1 = p;
  state.userId = user.id;
});

test("device 1: addDevice registers a passkey in the virtual authenticator; GET /devices lists it; webauthn_enabled", async () => {
  const p = state.device1;
  assert.ok(p, "needs the sign-in step");
  assert.equal((await credentials(p)).length, 0, "the authenticator starts empty");
  const from = seen.length;

  const device = ok(await sdk(p, "addDevice"), "addDevice", p);
  assert.deepEqual(await statuses("device1", "POST", "/devices/register", from, [200]), [200]);
  assert.deepEqual(await statuses("device1", "POST", "/devices/finalize", from, [200]), [200]);

  const creds = await credentials(p);
  assert.equal(creds.length, 1, "one credential in the authenticator");
  const cred = creds[0];
  assert.equal(cred.rpId, "localhost", "RP id = the host of the app's origin");
  assert.equal(cred.isResidentCredential, true, "a discoverable credential (resident key)");
  assert.equal(Buffer.from(cred.userHandle ?? "", "base64").length > 0, true, "a user handle");

  // The device record (briefing: device record).
  assert.ok(device && typeof device === "object", `addDevice data: ${JSON.stringify(device)}`);
  const d = device.device ?? device;
  assert.ok(d.id, `device id in ${JSON.stringify(device)}`);
  assert.equal(d.credential_id, cred.id, "credential_id is the browser's credential id (base64url)");
  assert.ok(isBase64url(d.credential_id));
  assert.equal(d.type, "webauthn");
  for (const k of ["name", "nickname", "display_name", "authenticator_attachment", "transports", "aaguid",
    "backup_eligible", "backed_up", "browser", "platform", "user_agent", "created_at", "updated_at", "last_used_at"]) {
    assert.ok(k in d, `device.${k} missing in ${JSON.stringify(d)}`);
  }
  assert.equal(d.attestation_format, "none", `device attestation_format in ${JSON.stringify(d)}`);
  assert.equal(d.authenticator_attachment, "platform", "an internal authenticator is a platform one");
  assert.deepEqual(d.transports, ["internal"]);
  assert.match(d.name, /Chrome/, "named from the user agent");
  // The SDK remembered the credential id for this user on this device (its new-device check).
  const stored = await p.page.evaluate((uid) => window.client.getCredentialIds(uid), state.userId);
  assert.deepEqual(stored, [cred.id]);

  const listed = await p.page.evaluate(() => window.api("GET", "/devices"));
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  assert.equal(listed.body.devices?.length, 1, JSON.stringify(listed.body));
  assert.equal(listed.body.devices[0].id, d.id);
  assert.equal(listed.body.devices[0].credential_id, cred.id);
  const admin = await adminDevices(state.userId);
  assert.deepEqual(admin.map((x) => x.id), [d.id], "the admin API lists it too");

  const user = await lookup(EMAIL);
  assert.equal(user.webauthn_enabled, true, "webauthn_enabled after addDevice");
  const current = await p.page.evaluate(async () => window.plain(await window.client.getUser()));
  const full = ok(current, "getUser").user;
  assert.equal(full.webauthn_enabled, true);
  if (d.authenticator_attachment) {
    assert.ok(full.webauthn_types?.includes(d.authenticator_attachment), `webauthn_types ${JSON.stringify(full.webauthn_types)}`);
  }
  // A second addDevice on the same authenticator: the server's excludeCredentials
  // lists the passkey, so the authenticator refuses and nothing is finalized.
  const from2 = seen.length;
  const again = await sdk(p, "addDevice");
  assert.equal(again.error?.kind, "WebAuthnError", `second addDevice: ${JSON.stringify(again)}`);
  assert.equal(again.error.code, "ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED", JSON.stringify(again.error));
  assert.deepEqual(await statuses("device1", "POST", "/devices/register", from2, [200]), [200]);
  assert.equal(calls("device1", "POST", "/devices/finalize", from2).length, 0);
  assert.equal((await credentials(p)).length, 1);

  assert.deepEqual(await rejections(p), []);
  state.device = d;
  state.credentialId = cred.id;
  state.signCount = cred.signCount;
});

test("device 1: signOut, then signIn(identifier) takes the passkey path (no message sent)", async () => {
  const p = state.device1;
  assert.ok(state.device, "needs the addDevice step");
  ok(await sdk(p, "signOut"), "signOut", p);
  assert.equal((await signedInUser(p)).status, "unauthenticated");

  const mark = await gh.outboxMark(EMAIL);
  const from = seen.length;
  const res = await sdk(p, "signIn", EMAIL);
  ok(res, "signIn (passkey)", p);
  assert.equal(res.data, null, "the passkey path returns no polling data");
  assert.deepEqual(await statuses("device1", "POST", "/webauthn/login/initialize", from, [200]), [200], "one /webauthn/login/initialize");
  assert.deepEqual(await statuses("device1", "POST", "/webauthn/login/finalize", from, [200]), [200], "one /webauthn/login/finalize");
  assert.equal(calls("device1", "POST", "/magic_links/login", from).length, 0);
  assert.equal(calls("device1", "POST", "/otps/login", from).length, 0);

  const s = await signedInUser(p);
  assert.equal(s.status, "authenticated");
  assert.equal(decodeJwt(s.access).uuid, state.userId);
  const cred = (await credentials(p))[0];
  assert.ok(cred.signCount > state.signCount, `the sign count went up (${state.signCount} → ${cred.signCount})`);
  state.signCount = cred.signCount;
  assert.deepEqual([...(await gh.outboxMark(EMAIL))].filter((id) => !mark.has(id)), [], "no new outbox message");
  // The session says how it was made (the SDK's revokeSession reads credential_id).
  const full = ok(await p.page.evaluate(async () => window.plain(await window.client.getUser())), "getUser").user;
  const current = (full.sessions ?? []).find((x) => x.current);
  assert.ok(current, `a current session in ${JSON.stringify(full.sessions)}`);
  assert.equal(current.type, "webauthn", JSON.stringify(current));
  assert.equal(current.credential_id, state.credentialId, JSON.stringify(current));
  const devs = await p.page.evaluate(() => window.api("GET", "/devices"));
  assert.ok(devs.body.devices?.[0]?.last_used_at, `last_used_at after a passkey sign-in: ${JSON.stringify(devs.body)}`);
  assert.deepEqual(await rejections(p), []);
});

test("device 1: a discoverable passkey sign-in (initialize with {}, empty allowCredentials)", async () => {
  const p = state.device1;
  assert.ok(state.device, "needs the addDevice step");
  ok(await sdk(p, "signOut"), "signOut", p);
  const out = await p.page.evaluate(() => window.discoverableSignIn());
  assert.equal(out.step, "done", `discoverable sign-in stopped at ${out.step}: ${JSON.stringify(out)}`);
  assert.equal((out.options.allowCredentials ?? []).length, 0, `allowCredentials for {}: ${JSON.stringify(out.options.allowCredentials)}`);
  assert.equal(out.credentialId, state.credentialId);
  assert.equal(decodeJwt(out.access).uuid, state.userId);
  ok(out.signedIn, "signInWithTokenPayload after the discoverable sign-in");
  assert.equal((await signedInUser(p)).status, "authenticated");
  assert.deepEqual(await rejections(p), []);
});

test("device 2 (no credential): signIn falls back to a magic link, then (OTP app) to a code; verifyOtp signs in", async () => {
  assert.ok(state.device, "needs the addDevice step");
  const ctx = await newContext("device2");

  // Magic-link app: NewDeviceError → a new-device magic link.
  let p = await openApp(ctx);
  assert.equal((await credentials(p)).length, 0, "this device's authenticator has no credential");
  let mark = await gh.outboxMark(EMAIL);
  let from = seen.length;
  let res = await sdk(p, "signIn", EMAIL);
  ok(res, "signIn (magic-link fallback)", p);
  assert.deepEqual(await statuses("device2", "POST", "/webauthn/login/initialize", from, [200]), [200]);
  assert.deepEqual(await statuses("device2", "POST", "/magic_links/login", from, [200]), [200]);
  assert.equal(calls("device2", "POST", "/webauthn/login/finalize", from).length, 0, "no assertion attempted");
  assert.ok(await gh.lastMagicToken(EMAIL, { after: mark }), "a magic link was sent");
  await waitFor(() => p.page.evaluate(() => window.__events.includes("magic_new_device_pending")), {
    what: "the magic_new_device_pending event",
  });
  await p.page.close();

  // OTP app: NewDeviceError → a code.
  await gh.patchApp(app.id, { email_auth_type: "otp" });
  p = await openApp(ctx);
  mark = await gh.outboxMark(EMAIL);
  from = seen.length;
  res = await sdk(p, "signIn", EMAIL);
  ok(res, "signIn (OTP fallback)", p);
  assert.deepEqual(await statuses("device2", "POST", "/webauthn/login/initialize", from, [200]), [200]);
  assert.deepEqual(await statuses("device2", "POST", "/otps/login", from, [200]), [200]);
  assert.equal(calls("device2", "POST", "/webauthn/login/finalize", from).length, 0);
  await waitFor(() => p.page.evaluate(() => window.__events.includes("otp_new_device_pending")), {
    what: "the otp_new_device_pending event",
  });
  const code = await gh.lastCode(EMAIL, { after: mark });
  const verified = ok(await sdk(p, "verifyOtp", code, EMAIL), "verifyOtp", p);
  ok(
    await p.page.evaluate(async (payload) => window.plain(await window.client.signInWithTokenPayload(payload)), verified.authPayload),
    "signInWithTokenPayload",
    p,
  );
  const s = await signedInUser(p);
  assert.equal(s.status, "authenticated");
  assert.equal(decodeJwt(s.access).uuid, state.userId);
  assert.equal((await credentials(p)).length, 0);
  assert.deepEqual(await rejections(p), []);
  state.device2 = p;
});

test("device 2: removeDeviceCredential removes the passkey; webauthn_enabled is false again; no unhandled rejection", async () => {
  const p = state.device2;
  assert.ok(p && state.device, "needs the previous steps");
  const from = seen.length;
  ok(await sdk(p, "removeDeviceCredential", state.device.id), "removeDeviceCredential", p);
  // The SDK does not wait for the DELETE's answer: wait for it here.
  const del = await waitFor(() => calls("device2", "DELETE", `/devices/${state.device.id}`, from)[0], {
    what: "the DELETE /devices/{id} response",
  });
  assert.equal(del.status, 200);
  const listed = await p.page.evaluate(() => window.api("GET", "/devices"));
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.body.devices, []);
  assert.deepEqual(await adminDevices(state.userId), []);
  const user = await lookup(EMAIL);
  assert.equal(user.webauthn_enabled, false, "webauthn_enabled after removing the last passkey");
  const full = ok(await p.page.evaluate(async () => window.plain(await window.client.getUser())), "getUser").user;
  assert.equal(full.webauthn_enabled, false);
  assert.deepEqual(full.webauthn_types ?? [], []);

  // Device 1 still has the credential (and remembers its id), but the user has
  // no passkey any more: signIn goes straight to a code (the app is OTP now).
  const d1 = state.device1;
  ok(await sdk(d1, "signOut"), "signOut", d1);
  // This client loaded the app's data while the app still sent magic links.
  ok(await sdk(d1, "getAppData", true), "getAppData(fresh)", d1);
  const mark = await gh.outboxMark(EMAIL);
  const from1 = seen.length;
  ok(await sdk(d1, "signIn", EMAIL), "signIn after the removal", d1);
  assert.deepEqual(await statuses("device1", "POST", "/otps/login", from1, [200]), [200]);
  assert.equal(calls("device1", "POST", "/webauthn/login/initialize", from1).length, 0, "no passkey attempt");
  assert.ok(await gh.lastCode(EMAIL, { after: mark }));

  // An assertion by the removed credential (still in device 1's authenticator) is refused.
  assert.equal((await credentials(d1)).length, 1);
  const refused = await d1.page.evaluate(() => window.discoverableSignIn());
  assert.equal(refused.step, "finalize", `a removed credential signed in: ${JSON.stringify(refused)}`);
  assert.equal(refused.credentialId, state.credentialId);
  // The slug is what the SDK's UI reads; the status is a 4xx the SDK does not
  // branch on (400, as the API reference says).
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.error_code, "webauthn_verification_error", JSON.stringify(refused.body));
  assert.equal((await signedInUser(d1)).status, "unauthenticated");

  assert.deepEqual(await rejections(p), [], "no unhandled rejection on device 2");
  assert.deepEqual(await rejections(d1), [], "no unhandled rejection on device 1");
});
