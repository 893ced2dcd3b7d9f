// End-to-end suite: the unmodified @scute/core 1.2.2 SDK against a real
// Gatehouse binary. It follows shared/spec/client-compat.md §12.2 (steps 1–12,
// and step 14's HTTP shapes when the server serves them) with the decisions of
// §13. Each step signs in its own users so that one failure does not cascade.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

import {
  ScuteClient,
  ScuteAdminApi,
  BaseHttpError,
  InvalidAuthTokenError,
  InvalidMagicLinkError,
} from "@scute/core";

import {
  SecretBook,
  installFetchSpy,
  recordUnhandledRejections,
  startGatehouse,
  createStorage,
  waitFor,
  decodeJwt,
  isBase64url,
  describeError,
  gatehouseBin,
} from "./harness.mjs";

// Fail once, clearly, when GATEHOUSE_BIN is missing (rather than once per test).
gatehouseBin();

const book = new SecretBook();
const calls = installFetchSpy(book);
const rejections = recordUnhandledRejections();

/** @type {import("./harness.mjs").Gatehouse} */
let gh;
/** Admin API of the bootstrap "Demo" app (email_auth_type magic), with its app secret. */
let admin;

const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const email = (name) => `${name}-${tag}@example.com`;
const MAGIC_NOT_FOUND = "Magic link not found or expired";
// Calls made on purpose to fail with a non-2xx DELETE (checked by the last tests).
const expectedDeleteFailures = new Set();

before(async () => {
  gh = await startGatehouse({ book });
  admin = new ScuteAdminApi({ appId: gh.appId, baseUrl: gh.base, secretKey: gh.apiSecret });
});

after(async () => {
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

// --- helpers -----------------------------------------------------------------

/** newClient returns a browser-like ScuteClient (no secret unless given) with its own storage. */
function newClient(appId = gh.appId, { secretKey } = {}) {
  const store = createStorage();
  const c = new ScuteClient({ appId, baseUrl: gh.base, secretKey, preferences: { sessionStorageAdapter: store } });
  return { c, store };
}

/** ok asserts an SDK {data, error} result succeeded and returns data. */
function ok(res, what) {
  assert.ok(res && typeof res === "object", `${what}: no result`);
  assert.equal(res.error, null, `${what} failed: ${describeError(res.error)}`);
  return res.data;
}

/**
 * httpError asserts an SDK result failed with a BaseHttpError whose code is the
 * HTTP status (an exact number, or "4xx"), with a JSON body {error: string,
 * error_code?}, and returns the error.
 */
function httpError(res, status, what, { errorCode, message } = {}) {
  const e = res?.error;
  assert.ok(
    e instanceof BaseHttpError,
    `${what}: want HTTP ${status}, got ${e ? describeError(e) : `success ${JSON.stringify(res?.data)}`}`,
  );
  if (status === "4xx") {
    assert.ok(e.code >= 400 && e.code < 500, `${what}: status ${e.code}; want 4xx (${describeError(e)})`);
  } else {
    assert.equal(e.code, status, `${what}: status ${e.code}; want ${status} (${describeError(e)})`);
  }
  assert.ok(e.json && typeof e.json === "object" && !Array.isArray(e.json), `${what}: error body is not a JSON object: ${describeError(e)}`);
  assert.equal(typeof e.json.error, "string", `${what}: error body has no string "error": ${JSON.stringify(e.json)}`);
  if (errorCode !== undefined) assert.equal(e.json.error_code, errorCode, `${what}: error_code; body ${JSON.stringify(e.json)}`);
  if (message !== undefined) assert.equal(e.json.error, message, `${what}: error message; body ${JSON.stringify(e.json)}`);
  return e;
}

/** withWindow runs fn with the fake `window` the SDK's magic-link code reads (never `document`, see §6.1). */
async function withWindow(href, fn) {
  assert.equal(globalThis.document, undefined, "document must stay undefined so that isBrowser() is false");
  globalThis.window = { location: { href } };
  try {
    return await fn();
  } finally {
    delete globalThis.window;
  }
}

const magicHref = (token, extra = "") => `http://app.test/?sct_magic=${encodeURIComponent(token)}${extra}`;

/** callsTo returns the requests made so far whose path ends with suffix. */
function callsTo(method, suffix) {
  return calls.filter((c) => c.method === method && new URL(c.url).pathname.endsWith(suffix));
}

/** pollPastRateLimit repeats an SDK call while it answers 429 (status polling is limited to one call per 2 s). */
async function pollPastRateLimit(fn, what) {
  return waitFor(
    async () => {
      const r = await fn();
      return r?.error?.code === 429 ? null : r;
    },
    { timeout: 15_000, interval: 250, what: `${what} past 429` },
  );
}

let otpAppCache;
/** otpApp lazily creates a second app with email_auth_type "otp", the Demo schema and its own app secret. */
async function otpApp() {
  if (!otpAppCache) {
    otpAppCache = (async () => {
      const demo = ok(await admin.getAppData(), "admin.getAppData");
      const app = await gh.createApp({
        name: "OTP app",
        origin: "http://localhost:3000",
        email_auth_type: "otp",
        user_meta_data_schema: demo.user_meta_data_schema,
      });
      const secret = await gh.appSecret(app.id);
      return {
        id: app.id,
        secret,
        admin: new ScuteAdminApi({ appId: app.id, baseUrl: gh.base, secretKey: secret }),
      };
    })();
  }
  return otpAppCache;
}

/**
 * otpSignIn runs the whole OTP flow with the SDK: send (register or login),
 * read the code from the dev outbox, verifyOtp, signInWithTokenPayload.
 */
async function otpSignIn(c, identifier, { register = false, meta } = {}) {
  const mark = await gh.outboxMark(identifier);
  const sent = register ? await c.sendRegisterOtp(identifier, meta) : await c.sendLoginOtp(identifier);
  ok(sent, `${register ? "sendRegisterOtp" : "sendLoginOtp"}(${identifier})`);
  const code = await gh.lastCode(identifier, { after: mark });
  const { authPayload } = ok(await c.verifyOtp(code, identifier), `verifyOtp(code, ${identifier})`);
  const signed = await c.signInWithTokenPayload(authPayload);
  assert.equal(signed.error, null, `signInWithTokenPayload: ${describeError(signed.error)}`);
  const claims = decodeJwt(authPayload.access);
  return { access: authPayload.access, refresh: authPayload.refresh, uuid: claims.uuid, claims, payload: authPayload };
}

/** sessionsOf lists the signed-in user's sessions through the SDK (§13.3: {sessions:[...]}). */
async function sessionsOf(c) {
  const data = ok(await c.listUserSessions(), "listUserSessions");
  assert.ok(data && Array.isArray(data.sessions), `GET /sessions body is not {sessions:[...]}: ${JSON.stringify(data)}`);
  return data.sessions;
}

// --- step 1: app config ---------------------------------------------------------

test("step 1: getAppData returns the app's public configuration (A1)", async () => {
  const { c } = newClient();
  const app = ok(await c.getAppData(true), "getAppData(true)");
  assert.equal(app.id, gh.appId);
  assert.equal(app.name, "Demo");
  assert.equal(app.email_auth_type, "magic");
  assert.equal(typeof app.auto_refresh, "boolean");
  assert.equal(typeof app.access_expiration, "number");
  assert.ok(app.access_expiration > 0);
  assert.ok(Array.isArray(app.allowed_identifiers), "allowed_identifiers must be an array");
  assert.ok(Array.isArray(app.required_identifiers), "required_identifiers must be an array");
  assert.ok(Array.isArray(app.user_meta_data_schema), "user_meta_data_schema must be an array");
  assert.equal(typeof app.scute_branding, "boolean");
  assert.equal(app.scute_branding, app.service_branding);

  // With the secret as a default header (S) the same route answers too.
  const viaAdmin = ok(await admin.getAppData(), "admin.getAppData with secret");
  assert.equal(viaAdmin.id, gh.appId);
});

test("step 1: an app switched to OTP reports email_auth_type otp", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  const app = ok(await c.getAppData(true), "getAppData(true)");
  assert.equal(app.email_auth_type, "otp");
  assert.equal(app.id, otp.id);
});

// --- step 2: lookups ----------------------------------------------------------------

test("step 2: unknown identifiers and ids look up as {user: null} and create nobody (A3, A4)", async () => {
  const { c } = newClient();
  const unknown = email("nobody");
  assert.equal(await c.identifierExists(unknown), null);
  const byIdentifier = ok(await admin.getUserByIdentifier(unknown), "admin.getUserByIdentifier");
  assert.deepEqual(byIdentifier, { user: null });
  const byId = ok(await admin.getUserByUserId(randomUUID()), "admin.getUserByUserId");
  assert.deepEqual(byId, { user: null });
  const listed = ok(await admin.listUsers({ email: unknown }), "admin.listUsers");
  assert.deepEqual(listed.users, [], "the lookup must not create a user");
});

// --- step 3: OTP sign-up and sign-in -------------------------------------------------------

test("step 3: OTP sign-up, wrong code, verifyOtp, signInWithTokenPayload (C7, A3, C8, C18)", async () => {
  const otp = await otpApp();
  const { c, store } = newClient(otp.id);
  const app = ok(await c.getAppData(), "getAppData");
  const id = email("ada");
  const mark = await gh.outboxMark(id);
  const before = callsTo("POST", "/otps/login").length;
  ok(await c.sendRegisterOtp(id, { first_name: "Ada" }), "sendRegisterOtp");
  assert.equal(callsTo("POST", "/otps/login").length, before + 1, "sendRegisterOtp must POST /otps/login");

  // verifyOtp looks the identifier up first, so the user must exist now.
  const looked = await c.identifierExists(id);
  assert.ok(looked && looked.id, `after /otps/login the user must exist; lookup gave ${JSON.stringify(looked)}`);
  assert.equal(looked.email, id);

  const code = await gh.lastCode(id, { after: mark });
  const wrong = code.replace(/[0-9]/g, (d) => String((Number(d) + 1) % 10));
  httpError(await c.verifyOtp(wrong, id), "4xx", "verifyOtp with a wrong code");

  const { authPayload, magicPayload } = ok(await c.verifyOtp(code, id), "verifyOtp");
  const claims = decodeJwt(authPayload.access);
  assert.equal(claims.uuid, looked.id, "access token uuid claim = ScuteUser.id");
  assert.equal(typeof claims.exp, "number");
  const now = Date.now() / 1000;
  assert.ok(claims.exp > now, "access token already expired");
  assert.ok(claims.exp - now <= app.access_expiration + 30, `access token lives ${claims.exp - now} s; app access_expiration is ${app.access_expiration}`);
  assert.equal(typeof authPayload.refresh, "string");
  assert.ok(authPayload.refresh.length > 0);
  if (authPayload.user_id !== undefined) assert.equal(authPayload.user_id, claims.uuid);
  assert.equal(magicPayload.uuid, looked.id);

  const signed = await c.signInWithTokenPayload(authPayload);
  assert.equal(signed.error, null, `signInWithTokenPayload: ${describeError(signed.error)}`);
  assert.equal(store.map.get("sc-access-token"), authPayload.access);
  assert.equal(store.map.get("sc-refresh-token"), authPayload.refresh);
  assert.equal(store.map.get("sct_last_login"), id);

  // A code works once.
  const { c: other } = newClient(otp.id);
  httpError(await other.verifyOtp(code, id), "4xx", "verifyOtp with an already used code");
});

test("step 3: signInOrUp sends e-mail identifiers of an OTP app to /otps/login", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  // The client loads the app's data in the background at construction, and
  // signInOrUp reads it without waiting (a race in the SDK that a busy CI
  // machine lost once): wait for it, as an app's first render does.
  ok(await c.getAppData(), "getAppData");
  const id = email("either");
  const mark = await gh.outboxMark(id);
  const otpBefore = callsTo("POST", "/otps/login").length;
  const magicBefore = calls.filter((x) => x.url.includes("/magic_links/")).length;
  ok(await c.signInOrUp(id), "signInOrUp");
  assert.equal(callsTo("POST", "/otps/login").length, otpBefore + 1);
  assert.equal(calls.filter((x) => x.url.includes("/magic_links/")).length, magicBefore);
  const code = await gh.lastCode(id, { after: mark });
  const { authPayload } = ok(await c.verifyOtp(code, id), "verifyOtp");
  assert.equal((await c.signInWithTokenPayload(authPayload)).error, null);
});

test("step 3: an invalid identifier on /otps/login is 4xx invalid_identifier", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  httpError(await c.sendLoginOtp("not an identifier"), "4xx", "sendLoginOtp(invalid)", { errorCode: "invalid_identifier" });
});

test("step 3: phone identifiers use OTP even on a magic-link app (§9)", async () => {
  const { c } = newClient();
  const phone = `+1202555${String(100 + Math.floor(Math.random() * 100)).padStart(4, "0")}`;
  const mark = await gh.outboxMark(phone);
  const before = callsTo("POST", "/otps/login").length;
  ok(await c.signInOrUp(phone), `signInOrUp(${phone})`);
  assert.equal(callsTo("POST", "/otps/login").length, before + 1, "phones must go to /otps/login");
  const code = await gh.lastCode(phone, { after: mark });
  const { authPayload } = ok(await c.verifyOtp(code, phone), "verifyOtp");
  assert.equal((await c.signInWithTokenPayload(authPayload)).error, null);
  const { user } = ok(await c.getUser(), "getUser");
  assert.equal(user.phone, phone);
});

// --- step 4: current user --------------------------------------------------------------------

test("step 4: getUser and getSession return the signed-in user (C18)", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  const id = email("current");
  const s = await otpSignIn(c, id, { register: true, meta: { first_name: "Cur" } });

  const { user } = ok(await c.getUser(), "getUser");
  assert.equal(user.id, s.uuid);
  assert.equal(user.email, id);
  assert.ok(user.meta && typeof user.meta === "object", "user.meta must be an object");
  assert.equal(user.meta.first_name, "Cur", "user_meta sent with the register OTP must be kept");
  assert.deepEqual(user.user_meta, user.meta, "meta and user_meta carry the same object (§3.5)");
  assert.ok(Array.isArray(user.sessions), "user.sessions must be an array");

  const session = await c.getSession();
  assert.equal(session.error, null, `getSession: ${describeError(session.error)}`);
  assert.equal(session.data.session.status, "authenticated");
  assert.equal(session.data.session.access, s.access);
  assert.equal(session.data.user.id, s.uuid);

  const bad = await c.getUser("eyJhbGciOiJFUzI1NiJ9.eyJ1dWlkIjoieCIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJl");
  assert.ok(bad.error instanceof InvalidAuthTokenError, `a forged access token: want InvalidAuthTokenError (401), got ${describeError(bad.error)}`);
});

// --- step 5: update meta -----------------------------------------------------------------------

test("step 5: updateUserMeta changes the signed-in user's meta (C19)", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  await otpSignIn(c, email("meta"), { register: true, meta: { first_name: "Ada" } });
  const { user } = ok(await c.updateUserMeta({ last_name: "Lovelace" }), "updateUserMeta");
  assert.equal(user.meta.last_name, "Lovelace");
  const again = ok(await c.getUser(), "getUser");
  assert.equal(again.user.meta.last_name, "Lovelace");
  assert.equal(again.user.meta.first_name, "Ada", "meta keys are merged");
});

// --- step 6: refresh -------------------------------------------------------------------------

test("step 6: refreshSession rotates; an old refresh token inside the grace window gets the same successor (A13)", async () => {
  const otp = await otpApp();
  const { c, store } = newClient(otp.id);
  const s = await otpSignIn(c, email("refresh"), { register: true });

  const refreshed = await c.refreshSession();
  assert.equal(refreshed.error, null, `refreshSession: ${describeError(refreshed.error)}`);
  const next = refreshed.data;
  assert.equal(next.status, "authenticated");
  assert.notEqual(next.access, s.access, "refresh must issue a new access token");
  assert.equal(decodeJwt(next.access).uuid, s.uuid);
  assert.equal(typeof next.refresh, "string");
  assert.notEqual(next.refresh, s.refresh, "every refresh rotates the refresh token");
  assert.equal(store.map.get("sc-access-token"), next.access);
  assert.equal(store.map.get("sc-refresh-token"), next.refresh);

  // Reuse of the rotated-out token within the grace window (§13.5).
  const reused = ok(await c.admin.refresh(s.refresh), "admin.refresh(old refresh token) within the grace window");
  assert.equal(reused.refresh, next.refresh, "reuse inside the grace window returns the same successor");
  assert.equal(decodeJwt(reused.access).uuid, s.uuid);

  // The session still works with the new tokens.
  const session = await c.getSession();
  assert.equal(session.error, null, `getSession after refresh: ${describeError(session.error)}`);
  assert.equal(session.data.user.id, s.uuid);
});

test("step 6: rotate_access swaps a valid access token for a token payload (A14)", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  const s = await otpSignIn(c, email("rotate"), { register: true });

  // Without the secret: a payload, but no refresh token and no longer life than
  // the presented access token (a stolen access token stays short-lived).
  const anonymous = ok(await c.admin.refreshWithAccess(s.access), "admin.refreshWithAccess without secret");
  assert.equal(decodeJwt(anonymous.access).uuid, s.uuid);
  assert.equal(anonymous.refresh, undefined, "rotate_access without the API secret must not mint a refresh token");
  assert.ok(decodeJwt(anonymous.access).exp <= s.claims.exp, "rotate_access without the API secret must not extend the token's life");

  // With the secret (the Next.js handler): a full payload on the session's one refresh chain.
  const { c: server } = newClient(otp.id, { secretKey: otp.secret });
  const withSecret = ok(await server.admin.refreshWithAccess(s.access), "server.admin.refreshWithAccess (with API secret)");
  assert.equal(decodeJwt(withSecret.access).uuid, s.uuid);
  assert.equal(typeof decodeJwt(withSecret.access).exp, "number");
  assert.equal(typeof withSecret.refresh, "string");
  assert.notEqual(withSecret.refresh, s.refresh);

  httpError(await server.admin.refreshWithAccess("not-a-token"), 401, "refreshWithAccess with an invalid access token");
});

// --- step 7: sessions ------------------------------------------------------------------------

test("step 7: listUserSessions and revokeSession (C20, C21)", async () => {
  const otp = await otpApp();
  const id = email("sessions");
  const { c: first } = newClient(otp.id);
  const one = await otpSignIn(first, id, { register: true });
  const before = await sessionsOf(first);
  assert.ok(before.length >= 1, "the current session must be listed");
  for (const s of before) {
    assert.equal(typeof s.id, "string", `session id: ${JSON.stringify(s)}`);
    assert.ok("credential_id" in s, `session lacks credential_id: ${JSON.stringify(s)}`);
    assert.ok(s.created_at, `session lacks created_at: ${JSON.stringify(s)}`);
    assert.ok("last_used_at" in s && "last_active_at" in s, `session must carry both name sets (§3.6): ${JSON.stringify(s)}`);
  }

  const { c: second } = newClient(otp.id);
  const two = await otpSignIn(second, id);
  const afterSecond = await sessionsOf(first);
  const added = afterSecond.filter((s) => !before.some((b) => b.id === s.id));
  assert.equal(added.length, 1, `the second sign-in must add exactly one session; added ${JSON.stringify(added)}`);
  const sid = added[0].id;

  // A dummy credentialId skips the SDK's list-and-.find path (§13.3).
  const revoked = await first.revokeSession(sid, "x");
  assert.equal(revoked.error, null, `revokeSession: ${describeError(revoked.error)}`);
  await waitFor(async () => !(await sessionsOf(first)).some((s) => s.id === sid), { what: "revoked session gone from /sessions" });

  const gone = await second.getUser(two.access);
  assert.ok(gone.error instanceof InvalidAuthTokenError, `revoked access token: want InvalidAuthTokenError, got ${describeError(gone.error)}`);
  httpError(await otp.admin.refresh(two.refresh), 401, "refresh with the revoked session's refresh token");

  // The other session is untouched.
  const still = ok(await first.getUser(), "getUser on the remaining session");
  assert.equal(still.user.id, one.uuid);
});

// --- step 8: magic link, cross-device ------------------------------------------------------------------

test("step 8: magic link across devices: pending 409, verify on B, status hands tokens to A once (C2, C4, C5)", async () => {
  const id = email("magic");
  const { user } = ok(await admin.createUser(id), "admin.createUser");
  const { c: a, store: storeA } = newClient();
  const { c: b, store: storeB } = newClient();

  const mark = await gh.outboxMark(id);
  const sent = ok(await a.sendLoginMagicLink(id), "sendLoginMagicLink");
  const linkId = sent?.magic_link?.id;
  assert.ok(linkId !== undefined && linkId !== null && linkId !== "", `want {magic_link:{id}}, got ${JSON.stringify(sent)}`);

  httpError(await a.getMagicLinkStatus(linkId), 409, "status before the link is used", { errorCode: "magic_link_pending" });

  const token = await gh.lastMagicToken(id, { after: mark });
  assert.notEqual(token, String(linkId), "the poll handle must differ from the e-mailed token");
  const magic = decodeJwt(token);
  assert.equal(magic.uuid, user.id);
  assert.equal(magic.webauthnEnabled, false, "Node sent webauthn_enabled false");
  assert.equal(magic.user_status, "active");

  const verified = await withWindow(magicHref(token), () => b.verifyMagicLinkToken(token));
  const { authPayload, magicPayload } = ok(verified, "B.verifyMagicLinkToken");
  assert.equal(decodeJwt(authPayload.access).uuid, user.id);
  assert.equal(magicPayload.uuid, user.id);
  assert.equal(storeB.map.get("sc-access-token"), undefined, "without sct_sk the SDK must not sign B in yet");
  assert.equal((await b.signInWithTokenPayload(authPayload)).error, null);
  assert.equal(storeB.map.get("sc-access-token"), authPayload.access);

  const signedA = await pollPastRateLimit(() => a.signInWithMagicLinkId(linkId), "A.signInWithMagicLinkId");
  assert.equal(signedA.error, null, `A.signInWithMagicLinkId: ${describeError(signedA.error)}`);
  const accessA = storeA.map.get("sc-access-token");
  assert.ok(accessA, "A must be signed in");
  assert.equal(decodeJwt(accessA).uuid, user.id);
  assert.notEqual(accessA, authPayload.access);
  assert.notEqual(storeA.map.get("sc-refresh-token"), authPayload.refresh, "A and B must hold different sessions");
  assert.ok((await sessionsOf(a)).length >= 2, "A and B must be two sessions");

  // Status hands the tokens out once (§13.2).
  const later = await pollPastRateLimit(() => a.getMagicLinkStatus(linkId), "second status poll");
  httpError(later, 404, "status after the tokens were collected", { errorCode: "magic_link_not_found_or_expired", message: MAGIC_NOT_FOUND });

  // The token works once.
  const { c: c2 } = newClient();
  const reuse = await withWindow(magicHref(token), () => c2.verifyMagicLinkToken(token));
  httpError(reuse, 404, "verifyMagicLinkToken with a used token", { errorCode: "magic_link_not_found_or_expired", message: MAGIC_NOT_FOUND });
});

test("step 8: with sct_sk=true verifyMagicLinkToken signs in at once", async () => {
  const id = email("skip");
  ok(await admin.createUser(id), "admin.createUser");
  const { c: a } = newClient();
  const { c: b, store: storeB } = newClient();
  const mark = await gh.outboxMark(id);
  ok(await a.sendLoginMagicLink(id), "sendLoginMagicLink");
  const token = await gh.lastMagicToken(id, { after: mark });
  const res = await withWindow(magicHref(token, "&sct_sk=true"), () => b.verifyMagicLinkToken(token));
  const { authPayload } = ok(res, "verifyMagicLinkToken with sct_sk=true");
  assert.equal(storeB.map.get("sc-access-token"), authPayload.access, "sct_sk=true signs in directly");
  const { user } = ok(await b.getUser(), "getUser");
  assert.equal(user.email, id);
});

test("step 8: an undecodable magic token is refused locally, with no request", async () => {
  const { c } = newClient();
  ok(await c.getAppData(), "getAppData"); // construction's own request has finished
  const before = callsTo("PATCH", "/magic_links/authenticate").length;
  const res = await withWindow(magicHref("garbage"), () => c.verifyMagicLinkToken("garbage"));
  assert.ok(res.error instanceof InvalidMagicLinkError, `want InvalidMagicLinkError, got ${describeError(res.error)}`);
  assert.equal(callsTo("PATCH", "/magic_links/authenticate").length, before, "no request may be sent");
});

// --- step 9: magic-link register --------------------------------------------------------------------

test("step 9: signUp on a magic-link app registers through /magic_links/register (C3)", async (t) => {
  const id = email("newbie");
  const { c: r, store: storeR } = newClient();
  const mark = await gh.outboxMark(id);
  const before = callsTo("POST", "/magic_links/register").length;
  const sent = ok(await r.signUp(id, { userMeta: { first_name: "Lin" } }), "signUp");
  assert.equal(callsTo("POST", "/magic_links/register").length, before + 1);
  const linkId = sent?.magic_link?.id;
  assert.ok(linkId !== undefined && linkId !== null && linkId !== "", `want {magic_link:{id}}, got ${JSON.stringify(sent)}`);

  const token = await gh.lastMagicToken(id, { after: mark });
  const magic = decodeJwt(token);
  assert.ok(magic.uuid !== undefined, "the register token must carry uuid");
  assert.equal(magic.webauthnEnabled, false);
  t.diagnostic(`register token user_status: ${magic.user_status}`);

  const { c: b } = newClient();
  const { authPayload } = ok(await withWindow(magicHref(token), () => b.verifyMagicLinkToken(token)), "verifyMagicLinkToken");
  assert.equal(decodeJwt(authPayload.access).uuid, magic.uuid);
  assert.equal((await b.signInWithTokenPayload(authPayload)).error, null);
  const { user } = ok(await b.getUser(), "getUser");
  assert.equal(user.id, magic.uuid);
  assert.equal(user.email, id);
  assert.equal(user.meta?.first_name, "Lin", "user_meta sent with the register link must be kept");

  const signed = await pollPastRateLimit(() => r.signInWithMagicLinkId(linkId), "R.signInWithMagicLinkId");
  assert.equal(signed.error, null, `R.signInWithMagicLinkId: ${describeError(signed.error)}`);
  assert.equal(decodeJwt(storeR.map.get("sc-access-token")).uuid, magic.uuid);
});

// --- step 10: sign out ------------------------------------------------------------------------------

test("step 10: signOut ends the session on the server and wipes local storage (A12)", async () => {
  const otp = await otpApp();
  const { c, store } = newClient(otp.id);
  const s = await otpSignIn(c, email("bye"), { register: true });
  assert.equal(await c.signOut(), true);
  assert.equal(store.map.get("sc-access-token"), undefined);
  assert.equal(store.map.get("sc-refresh-token"), undefined);

  const { c: probe } = newClient(otp.id);
  await waitFor(async () => (await probe.getUser(s.access)).error instanceof InvalidAuthTokenError, {
    what: "the signed-out access token to be refused by /current_user",
  });
  httpError(await otp.admin.refresh(s.refresh), 401, "refresh after sign-out");
});

// --- step 11: admin -------------------------------------------------------------------------------

test("step 11: createUser, listUsers, getUser, getUserByUserId, getUserByIdentifier (A2–A6, C1)", async () => {
  const id = email("admin");
  const created = ok(await admin.createUser(id, { first_name: "Ada", shoe: "42" }), "createUser");
  const user = created.user;
  assert.equal(user.status, "active");
  assert.equal(user.email, id);
  assert.equal(user.meta?.first_name, "Ada");
  assert.equal(user.meta?.shoe, undefined, "undeclared meta keys are dropped");
  assert.ok(created.user_meta_errors && "shoe" in created.user_meta_errors, `user_meta_errors must report shoe: ${JSON.stringify(created.user_meta_errors)}`);

  httpError(await admin.createUser(id), 400, "createUser twice", { errorCode: "user_exists" });

  const listed = ok(await admin.listUsers({ email: id, page: 1, limit: 10 }), "listUsers");
  assert.equal(listed.users.length, 1);
  assert.equal(listed.users[0].id, user.id);
  for (const k of ["total_pages", "current_page", "next_page", "prev_page", "per_page"]) {
    assert.ok(k in listed.pagination, `pagination lacks ${k}: ${JSON.stringify(listed.pagination)}`);
  }

  const got = ok(await admin.getUser(user.id), "getUser");
  assert.equal(got.user.id, user.id);
  assert.equal(got.user.meta.first_name, "Ada");

  const byId = ok(await admin.getUserByUserId(user.id), "getUserByUserId");
  assert.equal(byId.user.id, user.id);
  assert.equal(byId.user.email, id);

  const { c } = newClient();
  const anonymousById = ok(await c.admin.getUserByUserId(user.id), "getUserByUserId without secret");
  assert.equal(anonymousById.user.id, user.id);
  assert.notEqual(anonymousById.user.email, id, "an anonymous lookup by id shows the e-mail masked, not in full");
  const looked = await c.identifierExists(id.toUpperCase());
  assert.ok(looked, "lookup is case-insensitive for e-mail");
  for (const k of ["id", "status", "email", "email_verified", "phone", "phone_verified", "webauthn_enabled", "required_fields"]) {
    assert.ok(k in looked, `lookup user lacks ${k} (§3.4): ${JSON.stringify(looked)}`);
  }
  assert.equal(looked.id, user.id);

  const meta = ok(await c.getUserMetafieldState(user.id), "getUserMetafieldState");
  assert.equal(typeof meta.meta, "boolean");
});

test("step 11: updateUser merges meta and refuses undeclared keys (A7)", async () => {
  const { user } = ok(await admin.createUser(email("update"), { first_name: "Ada" }), "createUser");
  const updated = ok(await admin.updateUser(user.id, { user_meta: { last_name: "Lovelace" } }), "updateUser");
  assert.equal(updated.user.meta.last_name, "Lovelace");
  assert.equal(updated.user.meta.first_name, "Ada");
  const refused = httpError(await admin.updateUser(user.id, { user_meta: { shoe: "42" } }), 422, "updateUser with an undeclared key");
  assert.ok(refused.json.user_meta_errors && "shoe" in refused.json.user_meta_errors);
});

test("step 11: deactivateUser and activateUser flip the status (A8, A9)", async () => {
  const { user } = ok(await admin.createUser(email("flip")), "createUser");
  const off = ok(await admin.deactivateUser(user.id), "deactivateUser");
  assert.equal(off.user.status, "inactive");
  const { c } = newClient();
  assert.equal((await c.identifierExists(user.email)).status, "inactive");
  const on = ok(await admin.activateUser(user.id), "activateUser");
  assert.equal(on.user.status, "active");
});

test("step 11: an inactive user cannot sign in", async (t) => {
  const otp = await otpApp();
  const id = email("inactive");
  // The flow works while the user is active...
  const { c: first } = newClient(otp.id);
  const s = await otpSignIn(first, id, { register: true });
  // ...and not once it is deactivated.
  ok(await otp.admin.deactivateUser(s.uuid), "deactivateUser");
  const { c } = newClient(otp.id);
  const mark = await gh.outboxMark(id);
  const sent = await c.sendLoginOtp(id);
  if (sent.error) {
    httpError(sent, "4xx", "sendLoginOtp for an inactive user");
    t.diagnostic(`refused at send: ${sent.error.code} ${JSON.stringify(sent.error.json)}`);
    return;
  }
  // The send may look successful (no enumeration); then no code may work.
  let code = null;
  try {
    code = await gh.lastCode(id, { after: mark, timeout: 1_500 });
  } catch {
    t.diagnostic("send answered 2xx and no code was sent");
    return;
  }
  const e = httpError(await c.verifyOtp(code, id), "4xx", "verifyOtp for an inactive user");
  t.diagnostic(`a code was sent; verify refused: ${e.code} ${JSON.stringify(e.json)}`);
});

test("step 11: inviteUser creates a pending user and mails an invitation token (A10)", async () => {
  const id = email("invitee");
  const mark = await gh.outboxMark(id);
  const invited = ok(await admin.inviteUser(id, { first_name: "Ivy" }), "inviteUser");
  assert.equal(invited.user.status, "pending");
  const token = await gh.lastMagicToken(id, { after: mark });
  const claims = decodeJwt(token);
  assert.equal(claims.uuid, invited.user.id);
  assert.equal(claims.user_status, "pending");
  assert.equal(claims.webauthnEnabled, false);
});

test("step 11: confirmInvite activates the invited user and returns tokens (C6)", async () => {
  const id = email("confirm");
  const mark = await gh.outboxMark(id);
  const invited = ok(await admin.inviteUser(id, { first_name: "Ivy" }), "inviteUser");
  const token = await gh.lastMagicToken(id, { after: mark });

  const { c, store } = newClient();
  const payload = ok(await c.confirmInvite(token, { first_name: "Ivy", last_name: "Invited" }), "confirmInvite");
  assert.equal(decodeJwt(payload.access).uuid, invited.user.id);
  assert.equal((await c.signInWithTokenPayload(payload)).error, null);
  assert.equal(store.map.get("sct_last_login"), id);

  const after = ok(await admin.getUser(invited.user.id), "getUser");
  assert.equal(after.user.status, "active");
  assert.equal(after.user.meta.last_name, "Invited", "user_meta sent with confirm_invite must be applied");

  const { c: again } = newClient();
  httpError(await again.confirmInvite(token, {}), "4xx", "confirmInvite with a used invitation");
});

test("step 11: admin listUserSessions and revokeUserSession (A16, A17)", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  const s = await otpSignIn(c, email("adminsessions"), { register: true });

  const listed = ok(await otp.admin.listUserSessions(s.uuid), "admin.listUserSessions");
  assert.ok(Array.isArray(listed), `A16 must be a bare array: ${JSON.stringify(listed)}`);
  assert.equal(listed.length, 1);
  const sid = listed[0].id;

  // The real API also serves the list at /v1/{app}/users/{id}/sessions, as a bare array.
  const res = await fetch(`${gh.base}/v1/${otp.id}/users/${s.uuid}/sessions`, { headers: { Authorization: `Bearer ${otp.secret}` } });
  const alt = await res.json();
  assert.equal(res.status, 200, `GET /v1/{app}/users/{id}/sessions = ${res.status} ${JSON.stringify(alt)}`);
  assert.ok(Array.isArray(alt) && alt.some((x) => x.id === sid));

  const revoked = await otp.admin.revokeUserSession(s.uuid, sid);
  assert.equal(revoked.error, null);
  await waitFor(async () => {
    const r = await otp.admin.listUserSessions(s.uuid);
    return Array.isArray(r.data) && !r.data.some((x) => x.id === sid);
  }, { what: "the revoked session to leave the admin list" });
  httpError(await otp.admin.refresh(s.refresh), 401, "refresh after revokeUserSession");
});

test("step 11: deleteUser removes the user (A11)", async () => {
  const { user } = ok(await admin.createUser(email("delete")), "createUser");
  const res = await admin.deleteUser(user.id);
  assert.equal(res.error, null); // the SDK never awaits DELETE
  await waitFor(async () => (await admin.getUser(user.id)).error?.code === 404, { what: "getUser to answer 404 after deleteUser" });
  httpError(await admin.getUser(user.id), 404, "getUser of a deleted user", { errorCode: "user_not_found" });
});

test("step 11: without a secret every management call is 401", async () => {
  const { user } = ok(await admin.createUser(email("guarded")), "createUser");
  const anon = new ScuteAdminApi({ appId: gh.appId, baseUrl: gh.base });
  const wrong = new ScuteAdminApi({ appId: gh.appId, baseUrl: gh.base, secretKey: "not-a-secret" });
  const cases = [
    ["listUsers", () => anon.listUsers()],
    ["getUser", () => anon.getUser(user.id)],
    ["createUser", () => anon.createUser(email("anon"))],
    ["updateUser", () => anon.updateUser(user.id, { user_meta: { first_name: "X" } })],
    ["activateUser", () => anon.activateUser(user.id)],
    ["deactivateUser", () => anon.deactivateUser(user.id)],
    ["inviteUser", () => anon.inviteUser(email("anoninvite"))],
    ["listUsers with a wrong secret", () => wrong.listUsers()],
  ];
  for (const [name, call] of cases) httpError(await call(), 401, name);

  // The SDK's deleteUser cannot report its 401 (it would be an unhandled
  // rejection), so the same DELETE is sent with fetch.
  const url = `${gh.base}/v1/${gh.appId}/users/${user.id}`;
  const res = await fetch(url, { method: "DELETE" });
  expectedDeleteFailures.add(calls.findLast((x) => x.method === "DELETE" && x.url === url));
  assert.equal(res.status, 401);
  assert.equal(typeof (await res.json()).error, "string");
  const still = ok(await admin.getUser(user.id), "getUser after the refused delete");
  assert.equal(still.user.id, user.id);
});

// --- step 12: error body hygiene ------------------------------------------------------------------

test("step 12: management errors are JSON {error, error_code} with the status as code", async () => {
  httpError(await admin.getUser(randomUUID()), 404, "getUser(unknown)", { errorCode: "user_not_found" });
  const bad = `nope-${tag}`;
  const invalid = httpError(await admin.createUser(bad), 400, "createUser(invalid)", { errorCode: "invalid_identifier" });
  assert.ok(!JSON.stringify(invalid.json).includes(bad), "error bodies must not echo the identifier");
  httpError(await new ScuteAdminApi({ appId: gh.appId, baseUrl: gh.base }).listUsers(), 401, "listUsers without secret");
  const { c } = newClient(randomUUID());
  httpError(await c.getAppData(), 404, "getAppData of an unknown app", { errorCode: "app_not_found" });
});

test("step 12: sign-in errors are JSON {error, error_code} with the status as code", async () => {
  const otp = await otpApp();
  const { c } = newClient(otp.id);
  httpError(await c.sendLoginOtp("not an identifier"), "4xx", "sendLoginOtp(invalid)", { errorCode: "invalid_identifier" });

  const { c: m } = newClient();
  httpError(await m.getMagicLinkStatus(randomUUID()), 404, "getMagicLinkStatus(unknown)", {
    errorCode: "magic_link_not_found_or_expired",
    message: MAGIC_NOT_FOUND,
  });
  // A token that decodes locally but was never issued is "unknown" (§6.3).
  const forged = [
    Buffer.from(JSON.stringify({ alg: "ES256", typ: "magic+jwt" })).toString("base64url"),
    Buffer.from(JSON.stringify({ uuid: randomUUID(), webauthnEnabled: false, exp: 9999999999 })).toString("base64url"),
    Buffer.from("not a signature").toString("base64url"),
  ].join(".");
  httpError(await withWindow(magicHref(forged), () => m.verifyMagicLinkToken(forged)), 404, "verifyMagicLinkToken(forged)", {
    errorCode: "magic_link_not_found_or_expired",
    message: MAGIC_NOT_FOUND,
  });

  const cur = await fetch(`${gh.base}/v1/auth/${gh.appId}/current_user`, { headers: { "X-Authorization": "not-a-token" } });
  const curBody = await cur.json().catch(() => undefined);
  assert.equal(cur.status, 401, `GET /current_user with a bad token = ${cur.status} ${JSON.stringify(curBody)}`);
  assert.equal(typeof curBody?.error, "string");

  httpError(await m.admin.refresh("not-a-token"), 401, "refresh(invalid)");
});

// --- step 14: WebAuthn HTTP shapes ------------------------------------------------------------------

/** served reports whether the server has a route at path (a GET on a POST-only route is 405, not 404). */
async function served(path) {
  const res = await fetch(`${gh.base}${path}`);
  const body = await res.json().catch(() => ({}));
  return !(res.status === 404 && body.error_code === "not_found");
}

test("step 14: webauthnInitializeRegister returns creation options (C14)", async (t) => {
  const otp = await otpApp();
  if (!(await served(`/v1/auth/${otp.id}/devices/register`))) {
    t.skip("the server does not serve POST /devices/register yet");
    return;
  }
  const { c } = newClient(otp.id);
  const s = await otpSignIn(c, email("passkey"), { register: true });
  const { options } = ok(await c.webauthnInitializeRegister(s.access), "webauthnInitializeRegister");
  assert.ok(options && !options.publicKey, `options must be the inner PublicKeyCredentialCreationOptionsJSON: ${JSON.stringify(options)}`);
  assert.ok(isBase64url(options.challenge), `challenge must be base64url: ${options.challenge}`);
  assert.ok(options.rp && typeof options.rp.name === "string", `rp: ${JSON.stringify(options.rp)}`);
  assert.ok(options.user && isBase64url(options.user.id), `user.id must be base64url: ${JSON.stringify(options.user)}`);
  assert.ok(Array.isArray(options.pubKeyCredParams) && options.pubKeyCredParams.length > 0);
});

test("step 14: webauthnInitializeLogin before registration lists stand-ins, shaped as an unknown identifier's (C16)", async (t) => {
  const otp = await otpApp();
  if (!(await served(`/v1/auth/${otp.id}/webauthn/login/initialize`))) {
    t.skip("the server does not serve POST /webauthn/login/initialize yet");
    return;
  }
  const id = email("passkeylogin");
  const { c } = newClient(otp.id);
  await otpSignIn(c, id, { register: true });
  const { options } = ok(await c.webauthnInitializeLogin(id), "webauthnInitializeLogin");
  assert.ok(options && isBase64url(options.challenge), `options: ${JSON.stringify(options)}`);
  // A user without passkeys is answered as an unknown identifier is (stand-in
  // credentials, stable per identifier), so the answer does not tell who has
  // an account. The SDK never asks for such a user (webauthn_enabled is false).
  const shape = (list) => (list ?? []).map((x) => [x.type, isBase64url(x.id)]);
  assert.ok(shape(options.allowCredentials).every(([type, b64]) => type === "public-key" && b64), JSON.stringify(options.allowCredentials));
  const again = ok(await c.webauthnInitializeLogin(id), "webauthnInitializeLogin again").options;
  assert.deepEqual(again.allowCredentials, options.allowCredentials, "stable for the identifier");
  const unknown = ok(await c.webauthnInitializeLogin(email("nobody")), "webauthnInitializeLogin (unknown)").options;
  assert.deepEqual(shape(unknown.allowCredentials), shape(options.allowCredentials), "the same shape as an unknown identifier's");
});

// --- last: no unhandled rejections, no secrets in the log ---------------------------------------------

test("every DELETE answered 2xx and nothing was rejected unhandled", async () => {
  await waitFor(() => calls.filter((x) => x.method === "DELETE").every((x) => x.status !== undefined), {
    what: "every DELETE to be answered",
  });
  await new Promise((r) => setImmediate(r));
  const failed = calls.filter((x) => x.method === "DELETE" && !expectedDeleteFailures.has(x) && (x.status < 200 || x.status > 299));
  assert.deepEqual(failed.map((x) => `${x.status} DELETE ${new URL(x.url).pathname}`), []);
  assert.deepEqual(rejections.map((r) => describeError(r)), []);
});

test("the server log holds none of the codes, tokens, magic tokens or API secrets the suite saw", async (t) => {
  await book.settle();
  await gh.stop(); // every log line is written once the server has exited
  const log = gh.logText();
  assert.ok(log.includes('"msg"'), "the server log was not captured");
  const started = log
    .split("\n")
    .filter((l) => l.includes("gatehouse started"))
    .map((l) => JSON.parse(l))[0];
  t.diagnostic(`server database: ${started?.database}`);
  if (process.env.GATEHOUSE_E2E_DATABASE_URL) assert.notEqual(started?.database, "sqlite", "GATEHOUSE_E2E_DATABASE_URL was not used");
  assert.ok(book.values.size > 0, "the suite saw no secrets at all");

  const counts = {};
  const leaks = [];
  for (const [value, kind] of book.values) {
    counts[kind] = (counts[kind] ?? 0) + 1;
    if (kind === "otp") {
      if (new RegExp(`(?<![0-9A-Za-z])${value}(?![0-9A-Za-z])`).test(log)) leaks.push(`${kind} code`);
      continue;
    }
    if (log.includes(value)) leaks.push(`${kind} ${value.slice(0, 12)}…`);
    const parts = value.split(".");
    if (parts.length === 3 && parts[2].length >= 16 && log.includes(parts[2])) leaks.push(`${kind} signature ${value.slice(0, 12)}…`);
  }
  if (log.includes("sct_magic=")) leaks.push("a magic link (sct_magic=)");
  t.diagnostic(`scanned ${book.values.size} values: ${JSON.stringify(counts)}`);
  assert.deepEqual(leaks, [], "secrets found in the server log");
});
